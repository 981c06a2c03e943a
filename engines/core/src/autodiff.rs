//! Reverse-mode differentiation of programs: from a recorded [`Program`],
//! the program that computes its outputs and the gradients (or
//! vector-Jacobian products) of one of them with respect to chosen inputs.
//! The derived program is an ordinary one: checked step by step as it is
//! recorded, printed, compiled and cached by the engines, and run as one
//! message on the domain that holds the data.
//!
//! The derivation replays the program's steps, then walks them backwards
//! once, recording for each step that an input needing a gradient reaches
//! the ops of its rule, and summing the contributions a value gets from
//! every step that reads it. An einsum is one node of the program; its
//! derivation replays it as the binary contractions its engine would take
//! and walks those back, two binary contractions each: an einsum of `n`
//! operands costs at most `2(n - 1)` of them back, where one `(n-1)`-ary
//! einsum per operand would cost `n(n - 2)`.
//!
//! # Complex numbers
//!
//! For a real loss `L` of a complex `z = x + iy` the gradient is
//! `∂L/∂x + i·∂L/∂y` (PyTorch's convention, the conjugate Wirtinger
//! derivative times two): the direction of steepest ascent, so that
//! `z - lr·grad` descends. JAX's `grad` returns its conjugate. Through a
//! holomorphic step `w = f(z)` the rule is `z̄ = w̄ · conj(f'(z))`.
//!
//! # Stated choices
//!
//! - `maximum`/`minimum` (elementwise) give half the gradient to each
//!   operand where they are equal; `max`/`min` reductions split it evenly
//!   among the elements equal to the result.
//! - `abs` of a real has derivative `sign(x)`: 0 at 0. `sign`, `floor_div`,
//!   comparisons and casts to integer or `bool` types have none (their
//!   gradients are zero, they stop it).
//! - `clamp` passes the gradient where the element is inside the bounds
//!   (ends included); `clamp_between` the same, and the rest to the bound
//!   the result took (`hi` where both are, as where `lo > hi`).
//! - `abs` of a complex `z` has gradient `ḡ z/|z|`, 0 at 0.
//! - A scatter that sets gives its updates the gradient at every index,
//!   duplicates included (of which only the last was written).
//! - Decompositions follow the standard rules (PyTorch's and JAX's). QR,
//!   SVD and eigh are differentiable where the loss does not depend on the
//!   gauge of their factors (the phases or signs of singular vectors and
//!   eigenvectors), as every loss of a tensor network's values; the
//!   inverse gaps `1/(λ_j - λ_i)` of eigh and `1/(s_j² - s_i²)` of SVD are
//!   broadened to `Δ/(Δ² + ε)`, `ε =` [`DEGENERACY`], so (near-)degenerate
//!   spectra give bounded gradients instead of infinities. eigh and
//!   Cholesky read their input's lower triangle (as faer does), and their
//!   gradients are of that: the strict lower part counts twice, the upper
//!   part not at all. QR of a wide matrix `A = [X | Y]` differentiates
//!   through the square `X = QU` and `Y = QV` (PyTorch's rule).
//! - `prod` has the product of the other elements for derivative, zeros
//!   included (one zero: only it gets a gradient; two: none does).
//! - `gemm` gives `c` no gradient when `beta` is 0 (it is not read).
//! - An op without a rule fails the
//!   derivation with [`GradError::NoRule`] naming the step; nothing is
//!   half-built.
//!
use std::collections::HashMap;

use crate::ops::{
    BinaryOp, CmpOp, EinsumSpec, MatOp, Meta, ReduceOp, Scalar, ScatterMode, SliceAxis, TensorOp,
    UnaryOp,
};
use crate::program::{Program, RecordError, Recorder, Value};
use crate::tensor::{c64, DType};

/// The ε of the broadened inverse gaps of the `eigh` and `svd` rules:
/// gaps between eigenvalues (or squared singular values) well above
/// `√ε = 1e-6` are inverted exactly, smaller ones are broadened instead of
/// dividing by (nearly) zero.
pub const DEGENERACY: f64 = 1e-12;

/// A program could not be differentiated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GradError {
    /// There is no output of that number.
    #[error("output {index} does not exist: the program has {outputs}")]
    NoSuchOutput {
        /// The number asked for.
        index: usize,
        /// How many outputs the program has.
        outputs: usize,
    },
    /// There is no input of that number.
    #[error("input {index} does not exist: the program has {inputs}")]
    NoSuchInput {
        /// The number asked for.
        index: usize,
        /// How many inputs the program has.
        inputs: usize,
    },
    /// A gradient is of a real rank-0 output (a loss); a vector-Jacobian
    /// product takes any output and its cotangent.
    #[error(
        "the gradient is of a real scalar, and output {index} is {dtype} of shape {shape:?}: \
         use Program::vjp with a cotangent"
    )]
    NotScalar {
        /// The output.
        index: usize,
        /// Its type.
        dtype: DType,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// Gradients are of float and complex values.
    #[error("input {index} is {dtype}: gradients are of float and complex inputs")]
    NotDifferentiable {
        /// The input.
        index: usize,
        /// Its type.
        dtype: DType,
    },
    /// A step the gradient flows through has no rule (yet).
    #[error("program step {step} ({op}) has no derivative rule{}", detail(reason))]
    NoRule {
        /// The step's number.
        step: usize,
        /// Its op.
        op: &'static str,
        /// What is missing, when it is narrower than the op.
        reason: Option<&'static str>,
    },
    /// A step of the derived program did not record (a bug in a rule,
    /// reported rather than hidden).
    #[error("recording the derivative: {0}")]
    Record(#[from] RecordError),
}

fn detail(reason: &Option<&'static str>) -> String {
    reason.map(|r| format!(" ({r})")).unwrap_or_default()
}

impl Program {
    /// The program that computes this one's outputs and then the gradient
    /// of output `output` (a real rank-0 tensor: a loss) with respect to
    /// each input of `wrt`, in that order: outputs first, one gradient per
    /// `wrt` input after them, each of its input's type and shape. Its
    /// inputs are this program's.
    ///
    /// ```
    /// use weft_core::{DType, Program, Tensor};
    ///
    /// // L = Σ (A x)², and its gradient with respect to x.
    /// let loss = Program::record(|p| {
    ///     let a = p.input(DType::F64, &[3, 2]);
    ///     let x = p.input(DType::F64, &[2]);
    ///     let y = p.einsum("ij,j->i", &[a, x])?;
    ///     let l = p.einsum("i,i->", &[y, y])?;
    ///     p.output(l)
    /// })?;
    /// let grad = loss.gradient(0, &[1])?;
    /// assert_eq!(grad.output_metas()[1].shape, [2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`GradError`]: no such output or input, an output that is not a real
    /// scalar, an input that is not of a float or complex type, a step the
    /// gradient flows through that has no rule.
    pub fn gradient(&self, output: usize, wrt: &[usize]) -> Result<Program, GradError> {
        let meta = self.check_output(output)?;
        if !meta.dtype.is_float() || !meta.shape.is_empty() {
            return Err(GradError::NotScalar {
                index: output,
                dtype: meta.dtype,
                shape: meta.shape.clone(),
            });
        }
        self.derive(Seeds::One(output), wrt)
    }

    /// The vector-Jacobian product of the outputs `outputs`: the program
    /// that takes this one's inputs and then one cotangent per output of
    /// `outputs`, in that order and each of its output's type and shape,
    /// and computes this one's outputs and then, for each input of `wrt`,
    /// the cotangents pulled back to it and summed (for one real scalar
    /// output and a cotangent of 1, the [`Program::gradient`]). An output
    /// listed twice gets the sum of its two cotangents.
    ///
    /// # Errors
    ///
    /// As [`Program::gradient`], for outputs of float or complex types.
    pub fn vjp(&self, outputs: &[usize], wrt: &[usize]) -> Result<Program, GradError> {
        for &output in outputs {
            let meta = self.check_output(output)?;
            if !meta.dtype.is_field() {
                return Err(GradError::NotScalar {
                    index: output,
                    dtype: meta.dtype,
                    shape: meta.shape.clone(),
                });
            }
        }
        self.derive(Seeds::Cotangents(outputs), wrt)
    }

    fn check_output(&self, output: usize) -> Result<&Meta, GradError> {
        let outputs = self.outputs();
        let &value = outputs.get(output).ok_or(GradError::NoSuchOutput {
            index: output,
            outputs: outputs.len(),
        })?;
        Ok(&self.metas()[value])
    }

    fn derive(&self, seeds: Seeds<'_>, wrt: &[usize]) -> Result<Program, GradError> {
        let inputs = self.inputs();
        for &i in wrt {
            let &value = inputs.get(i).ok_or(GradError::NoSuchInput {
                index: i,
                inputs: inputs.len(),
            })?;
            let dtype = self.metas()[value].dtype;
            if !dtype.is_field() {
                return Err(GradError::NotDifferentiable { index: i, dtype });
            }
        }
        let mut failure: Option<GradError> = None;
        let derived = Program::record(|r| {
            match Derivation::run(self, r, seeds, wrt) {
                Ok(()) => Ok(()),
                Err(e) => {
                    // Recording stops here; the error is the derivation's.
                    let stop = match &e {
                        GradError::Record(inner) => inner.clone(),
                        _ => RecordError::NoOutput,
                    };
                    failure = Some(e);
                    Err(stop)
                }
            }
        });
        match (derived, failure) {
            (Ok(program), _) => Ok(match self.label() {
                Some(label) => program.labelled(format!("{label} gradient")),
                None => program,
            }),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(GradError::Record(e)),
        }
    }
}

/// Where a derivation's backward walk starts.
#[derive(Clone, Copy)]
enum Seeds<'a> {
    /// A loss: its cotangent is 1.
    One(usize),
    /// These outputs, with cotangents given as inputs after the program's.
    Cotangents(&'a [usize]),
}

/// One derivation in progress: the recorder of the derived program and
/// the original program's values as recorded there.
struct Derivation<'a> {
    r: &'a mut Recorder,
    /// The derived program's value of each of the original's values.
    forward: Vec<Option<Value>>,
    /// The binary contractions an einsum of three or more operands was
    /// replayed as, by its step's number.
    trees: HashMap<usize, Vec<PairNode>>,
}

/// One binary contraction of a replayed einsum.
struct PairNode {
    spec: EinsumSpec,
    /// What it contracts: an operand of the einsum or an earlier node.
    args: [Source; 2],
    values: [Value; 2],
}

/// An argument of a [`PairNode`].
#[derive(Clone, Copy)]
enum Source {
    Operand(usize),
    Node(usize),
}

/// A rule's answer: a contribution per argument (`None`: none, or the
/// argument needs none), or why there is no rule.
type Pullback = Result<Vec<Option<Value>>, Missing>;

/// Why a rule gave nothing: no rule for the op, or a failed recording.
enum Missing {
    Rule(Option<&'static str>),
    Record(RecordError),
}

impl From<RecordError> for Missing {
    fn from(e: RecordError) -> Missing {
        Missing::Record(e)
    }
}

impl Derivation<'_> {
    fn run(
        program: &Program,
        r: &mut Recorder,
        seeds: Seeds<'_>,
        wrt: &[usize],
    ) -> Result<(), GradError> {
        let metas = program.metas();
        let mut d = Derivation {
            r,
            forward: vec![None; metas.len()],
            trees: HashMap::new(),
        };
        for &i in program.inputs() {
            let m = &metas[i];
            d.forward[i] = Some(d.r.input(m.dtype, &m.shape));
        }
        // Which values an input of `wrt` reaches: only their steps are
        // walked back.
        let mut needs = vec![false; metas.len()];
        for &i in wrt {
            needs[program.inputs()[i]] = true;
        }
        for (number, step) in program.steps().iter().enumerate() {
            let reached = step.args.iter().any(|&a| needs[a]);
            let args = d.values(&step.args);
            let outs = match &step.op {
                TensorOp::Einsum(spec) if reached && args.len() > 2 => {
                    d.replay_einsum(number, spec, &args)?
                }
                op => d.r.apply_many(op.clone(), &args)?,
            };
            for (k, v) in outs.into_iter().enumerate() {
                d.forward[step.first_result + k] = Some(v);
                needs[step.first_result + k] = reached;
            }
        }
        let mut cot: HashMap<usize, Value> = HashMap::new();
        match seeds {
            Seeds::One(output) => {
                let value = program.outputs()[output];
                let one = TensorOp::Full {
                    dtype: metas[value].dtype,
                    shape: Vec::new(),
                    value: Scalar::Real(1.0),
                };
                cot.insert(value, d.r.apply(one, &[])?);
            }
            Seeds::Cotangents(outputs) => {
                for &output in outputs {
                    let value = program.outputs()[output];
                    let m = &metas[value];
                    let seed = d.r.input(m.dtype, &m.shape);
                    let summed = match cot.get(&value) {
                        Some(&earlier) => d.r.add(earlier, seed)?,
                        None => seed,
                    };
                    cot.insert(value, summed);
                }
            }
        }
        for (number, step) in program.steps().iter().enumerate().rev() {
            let results = step.first_result..step.first_result + step.results;
            let gs: Vec<Option<Value>> = results.clone().map(|i| cot.get(&i).copied()).collect();
            let need: Vec<bool> = step.args.iter().map(|&a| needs[a]).collect();
            if gs.iter().all(Option::is_none) || !need.contains(&true) {
                continue;
            }
            let args = d.values(&step.args);
            let outs: Vec<Value> = results.map(|i| d.forward[i].expect("replayed")).collect();
            let pulled = match &step.op {
                TensorOp::Linalg(op) => d.linalg(*op, &args, &outs, &gs, &need),
                TensorOp::Einsum(_) if d.trees.contains_key(&number) => {
                    let nodes = d.trees.remove(&number).expect("looked up");
                    let g = gs[0].expect("one result, with a cotangent");
                    d.einsum_tree(&nodes, g, &need)
                }
                op => {
                    let g = gs[0].expect("one result, with a cotangent");
                    d.pullback(op, &args, outs[0], g, &need)
                }
            };
            let pulled = pulled.map_err(|m| match m {
                Missing::Rule(reason) => GradError::NoRule {
                    step: number,
                    op: step.op.name(),
                    reason,
                },
                Missing::Record(e) => GradError::Record(e),
            })?;
            for ((&arg, contribution), &needed) in step.args.iter().zip(pulled).zip(&need) {
                let Some(c) = contribution.filter(|_| needed) else {
                    continue;
                };
                let summed = match cot.get(&arg) {
                    Some(&earlier) => d.r.add(earlier, c)?,
                    None => c,
                };
                cot.insert(arg, summed);
            }
        }
        for &value in program.outputs() {
            let v = d.forward[value].expect("replayed");
            d.r.output(v)?;
        }
        for &i in wrt {
            let value = program.inputs()[i];
            let g = match cot.get(&value) {
                Some(&g) => g,
                // The output does not depend on it: zeros.
                None => {
                    let m = &metas[value];
                    d.r.apply(
                        TensorOp::Full {
                            dtype: m.dtype,
                            shape: m.shape.clone(),
                            value: Scalar::Real(0.0),
                        },
                        &[],
                    )?
                }
            };
            d.r.output(g)?;
        }
        Ok(())
    }

    fn values(&self, numbers: &[usize]) -> Vec<Value> {
        numbers
            .iter()
            .map(|&i| self.forward[i].expect("recorded before use"))
            .collect()
    }

    fn meta(&self, v: Value) -> Meta {
        self.r.meta(v).expect("a value of this recorder").clone()
    }

    fn op(&mut self, op: TensorOp, args: &[Value]) -> Result<Value, Missing> {
        Ok(self.r.apply(op, args)?)
    }

    fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> Result<Value, Missing> {
        self.op(TensorOp::Binary(op), &[a, b])
    }

    fn un(&mut self, op: UnaryOp, a: Value) -> Result<Value, Missing> {
        self.op(TensorOp::Unary(op), &[a])
    }

    fn scalar(&mut self, op: BinaryOp, a: Value, value: Scalar) -> Result<Value, Missing> {
        let scalar_first = false;
        self.op(
            TensorOp::BinaryScalar {
                op,
                value,
                scalar_first,
            },
            &[a],
        )
    }

    /// `1 - a`, `value - a` and the like.
    fn scalar_first(&mut self, op: BinaryOp, value: Scalar, a: Value) -> Result<Value, Missing> {
        self.op(
            TensorOp::BinaryScalar {
                op,
                value,
                scalar_first: true,
            },
            &[a],
        )
    }

    /// `conj(v)` of a complex value; `v` itself of a real one.
    fn conj(&mut self, v: Value) -> Result<Value, Missing> {
        if self.meta(v).dtype.is_complex() {
            self.un(UnaryOp::Conj, v)
        } else {
            Ok(v)
        }
    }

    /// `g · conj(d)`: the pullback of a holomorphic step of derivative `d`.
    fn times_conj(&mut self, g: Value, d: Value) -> Result<Value, Missing> {
        let d = self.conj(d)?;
        self.bin(BinaryOp::Mul, g, d)
    }

    /// A `bool` mask as 0/1 of `dtype`.
    fn mask(&mut self, m: Value, dtype: DType) -> Result<Value, Missing> {
        self.op(TensorOp::Cast(dtype), &[m])
    }

    /// A tensor of `shape` with every element `value`.
    fn full(&mut self, dtype: DType, shape: Vec<usize>, value: Scalar) -> Result<Value, Missing> {
        self.op(
            TensorOp::Full {
                dtype,
                shape,
                value,
            },
            &[],
        )
    }

    fn zeros_like(&mut self, v: Value) -> Result<Value, Missing> {
        let m = self.meta(v);
        self.full(m.dtype, m.shape, Scalar::Real(0.0))
    }

    /// `g` (of a broadcast result) summed back to `shape`: over the axes in
    /// front that `shape` lacks, and over its extent-1 axes that `g` has
    /// longer.
    fn unbroadcast(&mut self, g: Value, shape: &[usize]) -> Result<Value, Missing> {
        let from = self.meta(g).shape;
        if from == shape {
            return Ok(g);
        }
        let lead = from.len() - shape.len();
        let axes: Vec<usize> = (0..from.len())
            .filter(|&k| k < lead || (shape[k - lead] == 1 && from[k] != 1))
            .collect();
        let summed = if axes.is_empty() {
            g
        } else {
            self.op(
                TensorOp::Reduce {
                    op: ReduceOp::Sum,
                    axes,
                    keep_dims: false,
                },
                &[g],
            )?
        };
        self.op(TensorOp::Reshape(shape.to_vec()), &[summed])
    }

    /// `g` of a reduction's result over `axes` spread back over `shape`:
    /// reshaped with the axes kept (as extent 1), then broadcast.
    fn spread(
        &mut self,
        g: Value,
        axes: &[usize],
        shape: &[usize],
    ) -> Result<(Value, Vec<usize>), Missing> {
        let kept: Vec<usize> = (0..shape.len())
            .map(|k| if axes.contains(&k) { 1 } else { shape[k] })
            .collect();
        let g = self.op(TensorOp::Reshape(kept.clone()), &[g])?;
        Ok((self.op(TensorOp::BroadcastTo(shape.to_vec()), &[g])?, kept))
    }

    /// The adjoint of the last two axes.
    fn adjoint(&mut self, v: Value) -> Result<Value, Missing> {
        self.read_as(v, MatOp::H)
    }

    /// `v` as a product reads it: transposed and conjugated as `read`
    /// says. Each is its own inverse, so this also reads a contribution
    /// back.
    fn read_as(&mut self, v: Value, read: MatOp) -> Result<Value, Missing> {
        let v = if read.transpose {
            let r = self.meta(v).shape.len();
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 2, r - 1);
            self.op(TensorOp::Permute(perm), &[v])?
        } else {
            v
        };
        if read.conjugate {
            self.conj(v)
        } else {
            Ok(v)
        }
    }

    /// The cotangent of a slice of a tensor of shape `from` spread back:
    /// zeros where it took nothing. With steps, each axis's cotangent is
    /// interleaved with `step - 1` zeros (a new axis padded, then merged)
    /// before the whole is padded into place.
    fn unslice(&mut self, axes: &[SliceAxis], g: Value, from: &[usize]) -> Result<Value, Missing> {
        let got = self.meta(g).shape;
        let mut g = g;
        let mut spans = got.clone();
        if axes.iter().any(|a| a.step != 1) {
            let split: Vec<usize> = got.iter().flat_map(|&len| [len, 1]).collect();
            let widths = axes
                .iter()
                .flat_map(|a| [(0, 0), (0, a.step - 1)])
                .collect();
            let merged: Vec<usize> = got.iter().zip(axes).map(|(&len, a)| len * a.step).collect();
            // The first element to one past the last taken.
            spans = got
                .iter()
                .zip(axes)
                .map(|(&len, a)| if len == 0 { 0 } else { (len - 1) * a.step + 1 })
                .collect();
            let take = spans
                .iter()
                .map(|&stop| SliceAxis {
                    start: 0,
                    stop,
                    step: 1,
                })
                .collect();
            g = self.op(TensorOp::Reshape(split), &[g])?;
            g = self.op(
                TensorOp::Pad {
                    widths,
                    value: Scalar::Real(0.0),
                },
                &[g],
            )?;
            g = self.op(TensorOp::Reshape(merged), &[g])?;
            g = self.op(TensorOp::Slice(take), &[g])?;
        }
        let widths = axes
            .iter()
            .zip(from)
            .zip(&spans)
            .map(|((a, &n), &span)| {
                let before = if span == 0 { 0 } else { a.start.min(n) };
                (before, n - before - span)
            })
            .collect();
        self.op(
            TensorOp::Pad {
                widths,
                value: Scalar::Real(0.0),
            },
            &[g],
        )
    }

    /// The contributions of one step of result `out` and cotangent `g` to
    /// its arguments `args` (of which `need` say which want one).
    fn pullback(
        &mut self,
        op: &TensorOp,
        args: &[Value],
        out: Value,
        g: Value,
        need: &[bool],
    ) -> Pullback {
        let shape = |d: &Self, i: usize| d.meta(args[i]).shape;
        let dtype = self.meta(out).dtype;
        Ok(match op {
            TensorOp::Binary(b) => {
                let (a, bb) = (args[0], args[1]);
                let (da, db) = match b {
                    BinaryOp::Add => (Some(g), Some(g)),
                    BinaryOp::Sub => (Some(g), Some(self.un(UnaryOp::Neg, g)?)),
                    BinaryOp::Mul => (
                        need[0].then(|| self.times_conj(g, bb)).transpose()?,
                        need[1].then(|| self.times_conj(g, a)).transpose()?,
                    ),
                    BinaryOp::Div => {
                        let da = self.conj(bb)?;
                        let da = self.bin(BinaryOp::Div, g, da)?;
                        let db = if need[1] {
                            // -(g / conj(b)) · conj(out)
                            let q = self.times_conj(da, out)?;
                            Some(self.un(UnaryOp::Neg, q)?)
                        } else {
                            None
                        };
                        (Some(da), db)
                    }
                    BinaryOp::Pow => {
                        let da = if need[0] {
                            // b · a^(b - 1)
                            let b1 = self.scalar(BinaryOp::Sub, bb, Scalar::Real(1.0))?;
                            let p = self.bin(BinaryOp::Pow, a, b1)?;
                            let d = self.bin(BinaryOp::Mul, bb, p)?;
                            Some(self.times_conj(g, d)?)
                        } else {
                            None
                        };
                        let db = if need[1] {
                            let l = self.un(UnaryOp::Log, a)?;
                            let d = self.bin(BinaryOp::Mul, out, l)?;
                            Some(self.times_conj(g, d)?)
                        } else {
                            None
                        };
                        (da, db)
                    }
                    BinaryOp::Maximum | BinaryOp::Minimum => {
                        let won = if *b == BinaryOp::Maximum {
                            CmpOp::Gt
                        } else {
                            CmpOp::Lt
                        };
                        let w = self.op(TensorOp::Compare(won), &[a, bb])?;
                        let tie = self.op(TensorOp::Compare(CmpOp::Eq), &[a, bb])?;
                        let w = self.mask(w, dtype)?;
                        let tie = self.mask(tie, dtype)?;
                        let half = self.scalar(BinaryOp::Mul, tie, Scalar::Real(0.5))?;
                        let wa = self.bin(BinaryOp::Add, w, half)?;
                        let wb = self.scalar_first(BinaryOp::Sub, Scalar::Real(1.0), wa)?;
                        (
                            Some(self.bin(BinaryOp::Mul, g, wa)?),
                            Some(self.bin(BinaryOp::Mul, g, wb)?),
                        )
                    }
                    BinaryOp::FloorDiv => (None, None),
                    BinaryOp::Rem => {
                        let db = if need[1] {
                            let q = self.bin(BinaryOp::FloorDiv, a, bb)?;
                            let q = self.bin(BinaryOp::Mul, g, q)?;
                            Some(self.un(UnaryOp::Neg, q)?)
                        } else {
                            None
                        };
                        (Some(g), db)
                    }
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => (None, None),
                };
                let da = da
                    .map(|v| self.unbroadcast(v, &shape(self, 0)))
                    .transpose()?;
                let db = db
                    .map(|v| self.unbroadcast(v, &shape(self, 1)))
                    .transpose()?;
                vec![da, db]
            }
            TensorOp::BinaryScalar {
                op: b,
                value,
                scalar_first,
            } => {
                let x = args[0];
                let conj = conj_scalar(*value);
                let d = match (b, scalar_first) {
                    (BinaryOp::Add, _) | (BinaryOp::Sub, false) => Some(g),
                    (BinaryOp::Sub, true) => Some(self.un(UnaryOp::Neg, g)?),
                    (BinaryOp::Mul, _) => Some(self.scalar(BinaryOp::Mul, g, conj)?),
                    (BinaryOp::Div, false) => Some(self.scalar(BinaryOp::Div, g, conj)?),
                    (BinaryOp::Div, true) => {
                        // d(s/x) = -s/x² = -out/x
                        let q = self.bin(BinaryOp::Div, out, x)?;
                        let q = self.times_conj(g, q)?;
                        Some(self.un(UnaryOp::Neg, q)?)
                    }
                    (BinaryOp::Pow, false) => {
                        // s · x^(s - 1)
                        let (re, im) = value.parts();
                        let less = Scalar::Complex(c64::new(re - 1.0, im));
                        let p = self.op(
                            TensorOp::BinaryScalar {
                                op: BinaryOp::Pow,
                                value: fit(less, dtype),
                                scalar_first: false,
                            },
                            &[x],
                        )?;
                        let d = self.scalar(BinaryOp::Mul, p, *value)?;
                        Some(self.times_conj(g, d)?)
                    }
                    (BinaryOp::Pow, true) => {
                        // out · ln s
                        let (re, im) = value.parts();
                        let ln = c64::new(re, im).ln();
                        let d = self.scalar(BinaryOp::Mul, out, fit(Scalar::Complex(ln), dtype))?;
                        Some(self.times_conj(g, d)?)
                    }
                    (BinaryOp::Maximum | BinaryOp::Minimum, _) => {
                        // Where x is the result (ties: half).
                        let s = self.full(dtype, Vec::new(), *value)?;
                        let eq = self.op(TensorOp::Compare(CmpOp::Eq), &[x, out])?;
                        let tie = self.op(TensorOp::Compare(CmpOp::Eq), &[x, s])?;
                        let eq = self.mask(eq, dtype)?;
                        let tie = self.mask(tie, dtype)?;
                        let half = self.scalar(BinaryOp::Mul, tie, Scalar::Real(0.5))?;
                        let w = self.bin(BinaryOp::Sub, eq, half)?;
                        Some(self.bin(BinaryOp::Mul, g, w)?)
                    }
                    (BinaryOp::FloorDiv, _) => None,
                    (BinaryOp::Rem, false) => Some(g),
                    (BinaryOp::Rem, true) => {
                        let s = self.full(dtype, Vec::new(), *value)?;
                        let q = self.bin(BinaryOp::FloorDiv, s, x)?;
                        let q = self.bin(BinaryOp::Mul, g, q)?;
                        Some(self.un(UnaryOp::Neg, q)?)
                    }
                    (BinaryOp::And | BinaryOp::Or | BinaryOp::Xor, _) => None,
                };
                vec![d]
            }
            TensorOp::Unary(u) => {
                let x = args[0];
                let d = match u {
                    UnaryOp::Neg => Some(self.un(UnaryOp::Neg, g)?),
                    UnaryOp::Conj => Some(self.conj(g)?),
                    UnaryOp::Exp => Some(self.times_conj(g, out)?),
                    UnaryOp::Expm1 => {
                        let d = self.scalar(BinaryOp::Add, out, Scalar::Real(1.0))?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Log => {
                        let c = self.conj(x)?;
                        Some(self.bin(BinaryOp::Div, g, c)?)
                    }
                    UnaryOp::Log1p => {
                        let d = self.scalar(BinaryOp::Add, x, Scalar::Real(1.0))?;
                        let c = self.conj(d)?;
                        Some(self.bin(BinaryOp::Div, g, c)?)
                    }
                    UnaryOp::Sqrt => {
                        let d = self.scalar(BinaryOp::Mul, out, Scalar::Real(2.0))?;
                        let c = self.conj(d)?;
                        Some(self.bin(BinaryOp::Div, g, c)?)
                    }
                    UnaryOp::Rsqrt => {
                        // -out / (2x)
                        let q = self.bin(BinaryOp::Div, out, x)?;
                        let d = self.scalar(BinaryOp::Mul, q, Scalar::Real(-0.5))?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Sin => {
                        let d = self.un(UnaryOp::Cos, x)?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Cos => {
                        let s = self.un(UnaryOp::Sin, x)?;
                        let d = self.un(UnaryOp::Neg, s)?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Tanh => {
                        let sq = self.bin(BinaryOp::Mul, out, out)?;
                        let d = self.scalar_first(BinaryOp::Sub, Scalar::Real(1.0), sq)?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Abs if !self.meta(x).dtype.is_complex() => {
                        let s = self.un(UnaryOp::Sign, x)?;
                        Some(self.bin(BinaryOp::Mul, g, s)?)
                    }
                    UnaryOp::Abs => {
                        // z̄ = ḡ z/|z|, 0 at 0 (the real `sign`'s choice).
                        let complex = self.meta(x).dtype;
                        let zero = self.full(dtype, Vec::new(), Scalar::Real(0.0))?;
                        let at_zero = self.op(TensorOp::Compare(CmpOp::Eq), &[out, zero])?;
                        let size = self.op(TensorOp::Cast(complex), &[out])?;
                        let phase = self.bin(BinaryOp::Div, x, size)?;
                        let zero = self.full(complex, Vec::new(), Scalar::Real(0.0))?;
                        let phase = self.op(TensorOp::Select, &[at_zero, zero, phase])?;
                        let gc = self.op(TensorOp::Cast(complex), &[g])?;
                        Some(self.bin(BinaryOp::Mul, gc, phase)?)
                    }
                    UnaryOp::Sign | UnaryOp::Not => None,
                };
                vec![d]
            }
            TensorOp::Reduce {
                op: r,
                axes,
                keep_dims: _,
            } => {
                let x = args[0];
                let xs = shape(self, 0);
                let (spread, kept) = self.spread(g, axes, &xs)?;
                let d = match r {
                    ReduceOp::Sum => spread,
                    ReduceOp::Mean => {
                        let n: usize = axes.iter().map(|&a| xs[a]).product();
                        self.scalar(BinaryOp::Div, spread, Scalar::Real(n as f64))?
                    }
                    ReduceOp::Max | ReduceOp::Min => {
                        // Split evenly among the elements equal to the result.
                        let o = self.op(TensorOp::Reshape(kept), &[out])?;
                        let eq = self.op(TensorOp::Compare(CmpOp::Eq), &[x, o])?;
                        let m = self.mask(eq, dtype)?;
                        let count = self.op(
                            TensorOp::Reduce {
                                op: ReduceOp::Sum,
                                axes: axes.clone(),
                                keep_dims: true,
                            },
                            &[m],
                        )?;
                        let share = self.bin(BinaryOp::Div, m, count)?;
                        self.bin(BinaryOp::Mul, spread, share)?
                    }
                    ReduceOp::Norm => {
                        // x / ‖x‖ (NaN where the norm is 0).
                        let o = self.op(TensorOp::Reshape(kept), &[out])?;
                        let o = self.op(TensorOp::Cast(self.meta(x).dtype), &[o])?;
                        let s = self.op(TensorOp::Cast(self.meta(x).dtype), &[spread])?;
                        let q = self.bin(BinaryOp::Div, x, o)?;
                        self.bin(BinaryOp::Mul, s, q)?
                    }
                    ReduceOp::Prod => {
                        // ∂/∂x_i = Π_{j≠i} x_j, zeros handled: with no zero
                        // in the product, P / x_i; with one, P' (the
                        // product of the others) at the zero and 0 elsewhere;
                        // with more, 0 everywhere. P' is the product with
                        // the zeros made ones.
                        let zero = self.full(dtype, Vec::new(), Scalar::Real(0.0))?;
                        let one = self.full(dtype, Vec::new(), Scalar::Real(1.0))?;
                        let is_zero = self.op(TensorOp::Compare(CmpOp::Eq), &[x, zero])?;
                        let z = self.mask(is_zero, dtype)?;
                        let sum = |axes: &Vec<usize>, op| TensorOp::Reduce {
                            op,
                            axes: axes.clone(),
                            keep_dims: true,
                        };
                        let zeros = self.op(sum(axes, ReduceOp::Sum), &[z])?;
                        let nonzero = self.op(TensorOp::Select, &[is_zero, one, x])?;
                        let p = self.op(sum(axes, ReduceOp::Prod), &[nonzero])?;
                        let none = self.op(TensorOp::Compare(CmpOp::Eq), &[zeros, zero])?;
                        let none = self.mask(none, dtype)?;
                        let single = self.op(TensorOp::Compare(CmpOp::Eq), &[zeros, one])?;
                        let single = self.mask(single, dtype)?;
                        let others = self.bin(BinaryOp::Div, p, nonzero)?;
                        let others = self.bin(BinaryOp::Mul, others, none)?;
                        let at_zero = self.bin(BinaryOp::Mul, z, p)?;
                        let at_zero = self.bin(BinaryOp::Mul, at_zero, single)?;
                        let d = self.bin(BinaryOp::Add, others, at_zero)?;
                        self.times_conj(spread, d)?
                    }
                    ReduceOp::Any | ReduceOp::All => return Ok(vec![None]),
                };
                vec![Some(d)]
            }
            TensorOp::Matmul => {
                let (a, b) = (args[0], args[1]);
                let da = if need[0] {
                    let bh = self.adjoint(b)?;
                    let p = self.op(TensorOp::Matmul, &[g, bh])?;
                    Some(self.unbroadcast(p, &shape(self, 0))?)
                } else {
                    None
                };
                let db = if need[1] {
                    let ah = self.adjoint(a)?;
                    let p = self.op(TensorOp::Matmul, &[ah, g])?;
                    Some(self.unbroadcast(p, &shape(self, 1))?)
                } else {
                    None
                };
                vec![da, db]
            }
            TensorOp::Einsum(spec) => self.einsum(spec, args, g, need)?,
            TensorOp::Dot { conjugate } => {
                let (a, b) = (args[0], args[1]);
                let gc = self.conj(g)?;
                let (wa, wb) = if *conjugate {
                    // Σ conj(a) b: ā = conj(g) b, b̄ = g a.
                    (
                        need[0]
                            .then(|| self.bin(BinaryOp::Mul, b, gc))
                            .transpose()?,
                        need[1].then(|| self.bin(BinaryOp::Mul, a, g)).transpose()?,
                    )
                } else {
                    (
                        need[0].then(|| self.times_conj(g, b)).transpose()?,
                        need[1].then(|| self.times_conj(g, a)).transpose()?,
                    )
                };
                vec![wa, wb]
            }
            TensorOp::Axpby { alpha, beta } => {
                let gx = self.scalar(BinaryOp::Mul, g, conj_scalar(*alpha))?;
                let gy = self.scalar(BinaryOp::Mul, g, conj_scalar(*beta))?;
                vec![
                    Some(self.unbroadcast(gx, &shape(self, 0))?),
                    Some(self.unbroadcast(gy, &shape(self, 1))?),
                ]
            }
            TensorOp::Reshape(_) => {
                vec![Some(self.op(TensorOp::Reshape(shape(self, 0)), &[g])?)]
            }
            TensorOp::Permute(perm) => {
                let mut inverse = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inverse[p] = i;
                }
                vec![Some(self.op(TensorOp::Permute(inverse), &[g])?)]
            }
            TensorOp::BroadcastTo(_) => vec![Some(self.unbroadcast(g, &shape(self, 0))?)],
            TensorOp::BroadcastInDim { dims, .. } => {
                // Sum over the axes not mapped and those repeated from 1.
                let from = shape(self, 0);
                let out_shape = self.meta(g).shape;
                let axes: Vec<usize> = (0..out_shape.len())
                    .filter(|k| match dims.iter().position(|d| d == k) {
                        None => true,
                        Some(i) => from[i] == 1 && out_shape[*k] != 1,
                    })
                    .collect();
                let summed = self.op(
                    TensorOp::Reduce {
                        op: ReduceOp::Sum,
                        axes: axes.clone(),
                        keep_dims: true,
                    },
                    &[g],
                )?;
                // The mapped axes, in the input's order.
                let mut order: Vec<usize> = (0..dims.len()).collect();
                order.sort_by_key(|&i| dims[i]);
                let mut perm = vec![0; dims.len()];
                for (pos, &i) in order.iter().enumerate() {
                    perm[i] = pos;
                }
                let kept: Vec<usize> = {
                    let mut sorted = dims.clone();
                    sorted.sort_unstable();
                    sorted
                        .iter()
                        .map(|&d| if axes.contains(&d) { 1 } else { out_shape[d] })
                        .collect()
                };
                let squeezed = self.op(TensorOp::Reshape(kept), &[summed])?;
                let placed = self.op(TensorOp::Permute(perm), &[squeezed])?;
                vec![Some(self.op(TensorOp::Reshape(from), &[placed])?)]
            }
            TensorOp::Reverse(axes) => vec![Some(self.op(TensorOp::Reverse(axes.clone()), &[g])?)],
            TensorOp::Slice(axes) => vec![Some(self.unslice(axes, g, &shape(self, 0))?)],
            TensorOp::Pad { widths, .. } => {
                let from = shape(self, 0);
                let axes = widths
                    .iter()
                    .zip(&from)
                    .map(|(&(before, _), &n)| SliceAxis {
                        start: before,
                        stop: before + n,
                        step: 1,
                    })
                    .collect();
                vec![Some(self.op(TensorOp::Slice(axes), &[g])?)]
            }
            TensorOp::Concatenate { axis, .. } => {
                let full = self.meta(g).shape;
                let mut at = 0;
                let mut parts = Vec::with_capacity(args.len());
                for (i, &needed) in need.iter().enumerate() {
                    let n = shape(self, i)[*axis];
                    let axes = (0..full.len())
                        .map(|k| {
                            if k == *axis {
                                SliceAxis {
                                    start: at,
                                    stop: at + n,
                                    step: 1,
                                }
                            } else {
                                SliceAxis::ALL
                            }
                        })
                        .collect();
                    at += n;
                    parts.push(
                        needed
                            .then(|| self.op(TensorOp::Slice(axes), &[g]))
                            .transpose()?,
                    );
                }
                parts
            }
            TensorOp::Cast(to) => {
                let from = self.meta(args[0]).dtype;
                if !to.is_field() {
                    vec![None]
                } else {
                    vec![Some(self.op(TensorOp::Cast(from), &[g])?)]
                }
            }
            TensorOp::Triangle { k, upper } => vec![Some(self.op(
                TensorOp::Triangle {
                    k: *k,
                    upper: *upper,
                },
                &[g],
            )?)],
            TensorOp::DiagEmbed { axes } => {
                vec![Some(self.op(TensorOp::Diagonal { axes: *axes }, &[g])?)]
            }
            TensorOp::Select => {
                let (m, a, b) = (args[0], args[1], args[2]);
                let z = self.full(dtype, Vec::new(), Scalar::Real(0.0))?;
                let da = if need[1] {
                    let v = self.op(TensorOp::Select, &[m, g, z])?;
                    Some(self.unbroadcast(v, &self.meta(a).shape)?)
                } else {
                    None
                };
                let db = if need[2] {
                    let v = self.op(TensorOp::Select, &[m, z, g])?;
                    Some(self.unbroadcast(v, &self.meta(b).shape)?)
                } else {
                    None
                };
                vec![None, da, db]
            }
            TensorOp::Clamp { .. } | TensorOp::ClampBetween => {
                let x = args[0];
                let moved = self.op(TensorOp::Compare(CmpOp::Ne), &[x, out])?;
                let kept = self.op(TensorOp::Compare(CmpOp::Eq), &[x, out])?;
                let m = self.mask(kept, dtype)?;
                let d = self.bin(BinaryOp::Mul, g, m)?;
                let mut pulled = vec![Some(self.unbroadcast(d, &shape(self, 0))?)];
                if args.len() == 3 {
                    // The bound the result took where it is not `x`: `hi`
                    // where it equals `hi` (also where `lo > hi`), else `lo`.
                    let moved = self.mask(moved, dtype)?;
                    let at_hi = self.op(TensorOp::Compare(CmpOp::Eq), &[out, args[2]])?;
                    let at_hi = self.mask(at_hi, dtype)?;
                    let to_hi = self.bin(BinaryOp::Mul, moved, at_hi)?;
                    let to_lo = self.bin(BinaryOp::Sub, moved, to_hi)?;
                    for (k, to) in [(1, to_lo), (2, to_hi)] {
                        pulled.push(if need[k] {
                            let d = self.bin(BinaryOp::Mul, g, to)?;
                            Some(self.unbroadcast(d, &shape(self, k))?)
                        } else {
                            None
                        });
                    }
                }
                pulled
            }
            TensorOp::Gather { axis } => {
                let zeros = self.zeros_like(args[0])?;
                let d = self.op(
                    TensorOp::Scatter {
                        axis: *axis,
                        mode: ScatterMode::Add,
                    },
                    &[zeros, args[1], g],
                )?;
                vec![Some(d), None]
            }
            TensorOp::Scatter { axis, mode } => {
                let (idx, updates) = (args[1], args[2]);
                let dx = match mode {
                    ScatterMode::Add => g,
                    ScatterMode::Set => {
                        let z = self.zeros_like(updates)?;
                        self.op(
                            TensorOp::Scatter {
                                axis: *axis,
                                mode: ScatterMode::Set,
                            },
                            &[g, idx, z],
                        )?
                    }
                };
                let du = need[2]
                    .then(|| self.op(TensorOp::Gather { axis: *axis }, &[g, idx]))
                    .transpose()?;
                vec![Some(dx), None, du]
            }
            TensorOp::DynamicSlice { .. } => {
                let zeros = self.zeros_like(args[0])?;
                let d = self.op(TensorOp::DynamicUpdateSlice, &[zeros, g, args[1]])?;
                vec![Some(d), None]
            }
            TensorOp::DynamicUpdateSlice => {
                let (update, starts) = (args[1], args[2]);
                let dx = if need[0] {
                    let z = self.zeros_like(update)?;
                    Some(self.op(TensorOp::DynamicUpdateSlice, &[g, z, starts])?)
                } else {
                    None
                };
                let du = if need[1] {
                    let sizes = self.meta(update).shape;
                    Some(self.op(TensorOp::DynamicSlice { sizes }, &[g, starts])?)
                } else {
                    None
                };
                vec![dx, du, None]
            }
            TensorOp::Compare(_) | TensorOp::ArgReduce { .. } => vec![None; args.len()],
            TensorOp::Full { .. }
            | TensorOp::Eye { .. }
            | TensorOp::Arange { .. }
            | TensorOp::Random { .. } => Vec::new(),
            TensorOp::Linalg(_) => unreachable!("decompositions have their own rules"),
            TensorOp::Gemm {
                alpha,
                beta,
                a: read_a,
                b: read_b,
            } => {
                // op(a) @ op(b) as a matmul of the operands as read, its
                // contributions read back the same way (transposing and
                // conjugating are their own inverses).
                let ga = if alpha.parts() == (1.0, 0.0) {
                    g
                } else {
                    self.scalar(BinaryOp::Mul, g, conj_scalar(*alpha))?
                };
                let a = self.read_as(args[0], *read_a)?;
                let b = self.read_as(args[1], *read_b)?;
                let pulled = self.pullback(&TensorOp::Matmul, &[a, b], out, ga, &need[..2])?;
                let mut back = Vec::with_capacity(3);
                for (d, read) in pulled.into_iter().zip([*read_a, *read_b]) {
                    back.push(d.map(|d| self.read_as(d, read)).transpose()?);
                }
                // `c` is not read when `beta` is 0.
                let reads_c = beta.parts() != (0.0, 0.0);
                back.push(
                    (need[2] && reads_c)
                        .then(|| self.scalar(BinaryOp::Mul, g, conj_scalar(*beta)))
                        .transpose()?,
                );
                back
            }
            TensorOp::Diagonal { axes } => {
                // The diagonal put back, zeros elsewhere, padded to the
                // input's extents where they differ.
                let from = shape(self, 0);
                let e = self.op(TensorOp::DiagEmbed { axes: *axes }, &[g])?;
                let got = self.meta(e).shape;
                let d = if got == from {
                    e
                } else {
                    let widths = from.iter().zip(&got).map(|(&n, &k)| (0, n - k)).collect();
                    self.op(
                        TensorOp::Pad {
                            widths,
                            value: Scalar::Real(0.0),
                        },
                        &[e],
                    )?
                };
                vec![Some(d)]
            }
            TensorOp::Compress { len } => {
                // The flat positions taken (the compress of their numbers),
                // and the cotangent added there.
                let from = shape(self, 0);
                let total: usize = from.iter().product();
                let numbers = self.op(
                    TensorOp::Arange {
                        dtype: DType::I64,
                        start: 0.0,
                        step: 1.0,
                        len: total,
                    },
                    &[],
                )?;
                let numbers = self.op(TensorOp::Reshape(from.clone()), &[numbers])?;
                let taken = self.op(TensorOp::Compress { len: *len }, &[numbers, args[1]])?;
                let zeros = self.full(dtype, vec![total], Scalar::Real(0.0))?;
                let added = self.op(
                    TensorOp::Scatter {
                        axis: 0,
                        mode: ScatterMode::Add,
                    },
                    &[zeros, taken, g],
                )?;
                vec![Some(self.op(TensorOp::Reshape(from), &[added])?), None]
            }
        })
    }

    fn matmul(&mut self, a: Value, b: Value) -> Result<Value, Missing> {
        self.op(TensorOp::Matmul, &[a, b])
    }

    /// `X` with `A X = B`.
    fn solve(&mut self, a: Value, b: Value) -> Result<Value, Missing> {
        self.op(TensorOp::Linalg(crate::ops::Linalg::Solve), &[a, b])
    }

    /// `X A⁻¹ = (A⁻ᴴ Xᴴ)ᴴ`, of `A` given as its adjoint `ah` (so `X M⁻ᴴ`
    /// of `ah = M`).
    fn right_solve(&mut self, x: Value, ah: Value) -> Result<Value, Missing> {
        let xh = self.adjoint(x)?;
        let y = self.solve(ah, xh)?;
        self.adjoint(y)
    }

    fn tril(&mut self, x: Value, k: isize) -> Result<Value, Missing> {
        self.op(TensorOp::Triangle { k, upper: false }, &[x])
    }

    /// The gradient of a Hermitian `g` as one of a function that reads only
    /// its input's lower triangle (faer's `Side::Lower`): the strict lower
    /// part twice, the diagonal once, the upper part nothing.
    fn lower_read(&mut self, g: Value) -> Result<Value, Missing> {
        let all = self.tril(g, 0)?;
        let strict = self.tril(g, -1)?;
        self.bin(BinaryOp::Add, all, strict)
    }

    /// `(x + xᴴ) / 2`.
    fn hermitian_part(&mut self, x: Value) -> Result<Value, Missing> {
        let xh = self.adjoint(x)?;
        let s = self.bin(BinaryOp::Add, x, xh)?;
        self.scalar(BinaryOp::Mul, s, Scalar::Real(0.5))
    }

    /// `v` (`[n]`) on the diagonal of an `n × n` matrix of `dtype`.
    fn diag_of(&mut self, v: Value, dtype: DType) -> Result<Value, Missing> {
        let v = self.op(TensorOp::Cast(dtype), &[v])?;
        self.op(TensorOp::DiagEmbed { axes: [0, 1] }, &[v])
    }

    /// An `n × n` zero matrix of `dtype`.
    fn zero_matrix(&mut self, n: usize, dtype: DType) -> Result<Value, Missing> {
        self.full(dtype, vec![n, n], Scalar::Real(0.0))
    }

    /// `F_ij = E_ij / (E_ij² + ε)` for `E_ij = x_j - x_i` (real `[n]`), as
    /// `dtype`: `1 / (x_j - x_i)` away from degeneracy, 0 on the diagonal,
    /// and at most `1 / (2√ε)` where `x_i ≈ x_j` (Lorentzian broadening,
    /// as tensor-network AD libraries regularise degenerate spectra;
    /// [`DEGENERACY`] is ε).
    fn inverse_gaps(&mut self, x: Value, dtype: DType) -> Result<Value, Missing> {
        let n = self.meta(x).shape[0];
        let row = self.op(TensorOp::Reshape(vec![1, n]), &[x])?;
        let col = self.op(TensorOp::Reshape(vec![n, 1]), &[x])?;
        let e = self.bin(BinaryOp::Sub, row, col)?;
        let e2 = self.bin(BinaryOp::Mul, e, e)?;
        let den = self.scalar(BinaryOp::Add, e2, Scalar::Real(DEGENERACY))?;
        let f = self.bin(BinaryOp::Div, e, den)?;
        self.op(TensorOp::Cast(dtype), &[f])
    }

    /// The decompositions and the solve: the standard rules (PyTorch's and
    /// JAX's), `gs` the cotangents of their results (`None`: unused).
    fn linalg(
        &mut self,
        op: crate::ops::Linalg,
        args: &[Value],
        outs: &[Value],
        gs: &[Option<Value>],
        need: &[bool],
    ) -> Pullback {
        use crate::ops::Linalg;
        let a = args[0];
        let dtype = self.meta(a).dtype;
        Ok(match op {
            Linalg::Solve => {
                // X = A⁻¹B: B̄ = A⁻ᴴ X̄, Ā = -B̄ Xᴴ.
                let (x, gx) = (outs[0], gs[0].expect("the solve's one result"));
                let ah = self.adjoint(a)?;
                let gb = self.solve(ah, gx)?;
                let ga = if need[0] {
                    let outer = if self.meta(x).shape.len() == 1 {
                        let xc = self.conj(x)?;
                        let spec = EinsumSpec::parse("i,j->ij").expect("a valid specification");
                        self.op(TensorOp::Einsum(spec), &[gb, xc])?
                    } else {
                        let xh = self.adjoint(x)?;
                        self.matmul(gb, xh)?
                    };
                    Some(self.un(UnaryOp::Neg, outer)?)
                } else {
                    None
                };
                vec![ga, Some(gb)]
            }
            Linalg::Cholesky => {
                // A = L Lᴴ: Ā = L⁻ᴴ Φ(Lᴴ L̄) L⁻¹, Φ the lower triangle with
                // its diagonal halved; then its Hermitian part, read as
                // faer reads A (the lower triangle).
                let (l, gl) = (outs[0], gs[0].expect("the factor"));
                let lh = self.adjoint(l)?;
                let m = self.matmul(lh, gl)?;
                let low = self.tril(m, 0)?;
                let strict = self.tril(m, -1)?;
                let both = self.bin(BinaryOp::Add, low, strict)?;
                let phi = self.scalar(BinaryOp::Mul, both, Scalar::Real(0.5))?;
                let t = self.solve(lh, phi)?;
                let s = self.right_solve(t, lh)?;
                let g = self.hermitian_part(s)?;
                vec![Some(self.lower_read(g)?)]
            }
            Linalg::Eigh => {
                // A = V diag(w) Vᴴ: Ā = V (diag(w̄) + F ∘ (X - Xᴴ)/2) Vᴴ,
                // X = Vᴴ V̄.
                let (w, v) = (outs[0], outs[1]);
                let n = self.meta(w).shape[0];
                let mut inner = match gs[0] {
                    Some(gw) => self.diag_of(gw, dtype)?,
                    None => self.zero_matrix(n, dtype)?,
                };
                let vh = self.adjoint(v)?;
                if let Some(gv) = gs[1] {
                    let x = self.matmul(vh, gv)?;
                    let xh = self.adjoint(x)?;
                    let k = self.bin(BinaryOp::Sub, x, xh)?;
                    let k = self.scalar(BinaryOp::Mul, k, Scalar::Real(0.5))?;
                    let f = self.inverse_gaps(w, dtype)?;
                    let kf = self.bin(BinaryOp::Mul, k, f)?;
                    inner = self.bin(BinaryOp::Add, inner, kf)?;
                }
                let left = self.matmul(v, inner)?;
                let g = self.matmul(left, vh)?;
                let g = self.hermitian_part(g)?;
                vec![Some(self.lower_read(g)?)]
            }
            Linalg::Qr => {
                let (q, r) = (outs[0], outs[1]);
                let gq = match gs[0] {
                    Some(g) => g,
                    None => self.zeros_like(q)?,
                };
                let gr = match gs[1] {
                    Some(g) => g,
                    None => self.zeros_like(r)?,
                };
                let shape = self.meta(a).shape;
                let (m, n) = (shape[0], shape[1]);
                if m >= n {
                    vec![Some(self.qr_tall(q, r, gq, gr)?)]
                } else {
                    // Wide: A = [X | Y], R = [U | V] with X = QU square and
                    // Y = QV; Ȳ = Q V̄, and X̄ is the square rule's with
                    // Q̄ + Y V̄ᴴ for Q̄ and Ū for R̄.
                    let cols = |start, stop| {
                        vec![
                            SliceAxis::ALL,
                            SliceAxis {
                                start,
                                stop,
                                step: 1,
                            },
                        ]
                    };
                    let y = self.op(TensorOp::Slice(cols(m, n)), &[a])?;
                    let u = self.op(TensorOp::Slice(cols(0, m)), &[r])?;
                    let gu = self.op(TensorOp::Slice(cols(0, m)), &[gr])?;
                    let gv = self.op(TensorOp::Slice(cols(m, n)), &[gr])?;
                    let gy = self.matmul(q, gv)?;
                    let gvh = self.adjoint(gv)?;
                    let ygv = self.matmul(y, gvh)?;
                    let gq = self.bin(BinaryOp::Add, gq, ygv)?;
                    let gx = self.qr_tall(q, u, gq, gu)?;
                    vec![Some(self.op(
                        TensorOp::Concatenate { axis: 1, inputs: 2 },
                        &[gx, gy],
                    )?)]
                }
            }
            Linalg::Svd => self.svd(a, outs, gs)?,
        })
    }

    /// QR's rule for `A = QR`, `m ≥ n`: `Ā = (Q̄ + Q copyltu(M)) R⁻ᴴ`,
    /// `M = R R̄ᴴ - Q̄ᴴ Q`, copyltu(M) the Hermitian matrix of M's lower
    /// triangle (its diagonal's real part).
    fn qr_tall(&mut self, q: Value, r: Value, gq: Value, gr: Value) -> Result<Value, Missing> {
        let dtype = self.meta(q).dtype;
        let grh = self.adjoint(gr)?;
        let rgr = self.matmul(r, grh)?;
        let gqh = self.adjoint(gq)?;
        let gqq = self.matmul(gqh, q)?;
        let m = self.bin(BinaryOp::Sub, rgr, gqq)?;
        let strict = self.tril(m, -1)?;
        let strict_h = self.adjoint(strict)?;
        let diag = self.op(TensorOp::Diagonal { axes: [0, 1] }, &[m])?;
        let diag = self.op(TensorOp::Cast(dtype.real()), &[diag])?;
        let diag = self.diag_of(diag, dtype)?;
        let sym = self.bin(BinaryOp::Add, strict, strict_h)?;
        let sym = self.bin(BinaryOp::Add, sym, diag)?;
        let qm = self.matmul(q, sym)?;
        let b = self.bin(BinaryOp::Add, gq, qm)?;
        // B R⁻ᴴ
        self.right_solve(b, r)
    }

    /// The thin SVD's rule: `A = U S Vᴴ`, `k = min(m, n)`,
    /// `Ā = U [(J ∘ S_j + S_i ∘ K) ∘ F + diag(S̄) + i·Im(UᴴŪ)_ii / S_i] Vᴴ
    ///      + (I - UUᴴ) Ū S⁻¹ Vᴴ + U S⁻¹ V̄ᴴ (I - VVᴴ)`,
    /// with `J = UᴴŪ - ŪᴴU`, `K = VᴴV̄ - V̄ᴴV`, `F_ij = 1/(S_j² - S_i²)`
    /// regularised as [`Derivation::inverse_gaps`] (the phase term only for
    /// complex types). The loss must not depend on the singular vectors'
    /// phases (gauge), as every loss of a tensor network's values does.
    fn svd(&mut self, a: Value, outs: &[Value], gs: &[Option<Value>]) -> Pullback {
        let meta = self.meta(a);
        let dtype = meta.dtype;
        let (m, n) = (meta.shape[0], meta.shape[1]);
        let (u, s, vh) = (outs[0], outs[1], outs[2]);
        let k = self.meta(s).shape[0];
        let mut inner = match gs[1] {
            Some(gsv) => self.diag_of(gsv, dtype)?,
            None => self.zero_matrix(k, dtype)?,
        };
        let s2 = self.bin(BinaryOp::Mul, s, s)?;
        let f = self.inverse_gaps(s2, dtype)?;
        let sc = self.op(TensorOp::Cast(dtype), &[s])?;
        let s_row = self.op(TensorOp::Reshape(vec![1, k]), &[sc])?;
        let s_col = self.op(TensorOp::Reshape(vec![k, 1]), &[sc])?;
        let v = self.adjoint(vh)?;
        let mut extra: Vec<Value> = Vec::new();
        if let Some(gu) = gs[0] {
            let uh = self.adjoint(u)?;
            let x = self.matmul(uh, gu)?;
            let xh = self.adjoint(x)?;
            let j = self.bin(BinaryOp::Sub, x, xh)?;
            let js = self.bin(BinaryOp::Mul, j, s_row)?;
            let jf = self.bin(BinaryOp::Mul, js, f)?;
            inner = self.bin(BinaryOp::Add, inner, jf)?;
            if dtype.is_complex() {
                // i·Im(UᴴŪ)_ii / S_i = (d - conj(d)) / (2 S_i), d = (UᴴŪ)_ii.
                let d = self.op(TensorOp::Diagonal { axes: [0, 1] }, &[x])?;
                let dc = self.conj(d)?;
                let im2 = self.bin(BinaryOp::Sub, d, dc)?;
                let s2x = self.scalar(BinaryOp::Mul, sc, Scalar::Real(2.0))?;
                let ph = self.bin(BinaryOp::Div, im2, s2x)?;
                let ph = self.op(TensorOp::DiagEmbed { axes: [0, 1] }, &[ph])?;
                inner = self.bin(BinaryOp::Add, inner, ph)?;
            }
            if m > k {
                // (I - UUᴴ) Ū S⁻¹ Vᴴ
                let gus = self.bin(BinaryOp::Div, gu, s_row)?;
                let proj = self.matmul(uh, gus)?;
                let back = self.matmul(u, proj)?;
                let perp = self.bin(BinaryOp::Sub, gus, back)?;
                extra.push(self.matmul(perp, vh)?);
            }
        }
        if let Some(gvh) = gs[2] {
            let gv = self.adjoint(gvh)?;
            let x = self.matmul(vh, gv)?;
            let xh = self.adjoint(x)?;
            let kk = self.bin(BinaryOp::Sub, x, xh)?;
            let sk = self.bin(BinaryOp::Mul, s_col, kk)?;
            let kf = self.bin(BinaryOp::Mul, sk, f)?;
            inner = self.bin(BinaryOp::Add, inner, kf)?;
            if n > k {
                // U S⁻¹ V̄ᴴ (I - VVᴴ)
                let gvs = self.bin(BinaryOp::Div, gv, s_row)?;
                let proj = self.matmul(vh, gvs)?;
                let back = self.matmul(v, proj)?;
                let perp = self.bin(BinaryOp::Sub, gvs, back)?;
                let perp_h = self.adjoint(perp)?;
                extra.push(self.matmul(u, perp_h)?);
            }
        }
        let left = self.matmul(u, inner)?;
        let mut g = self.matmul(left, vh)?;
        for e in extra {
            g = self.bin(BinaryOp::Add, g, e)?;
        }
        Ok(vec![Some(g)])
    }

    /// One einsum per operand: operand `i`'s cotangent is the einsum of the
    /// others (conjugated) and `g` into `i`'s labels; labels only `i` has
    /// (summed away by the forward einsum) are broadcast back after it.
    /// Replays the einsum of step `step` as the binary contractions its
    /// engine would take ([`EinsumSpec::pairwise`]), keeping them for the
    /// backward walk; as one node when an operand repeats a label.
    fn replay_einsum(
        &mut self,
        step: usize,
        spec: &EinsumSpec,
        args: &[Value],
    ) -> Result<Vec<Value>, GradError> {
        let shapes: Vec<Vec<usize>> = args.iter().map(|&a| self.meta(a).shape).collect();
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let pairs = match spec.pairwise(&refs) {
            Ok(Some(pairs)) => pairs,
            // As one node: a repeated label, or shapes its recording refuses.
            _ => return Ok(self.r.apply_many(TensorOp::Einsum(spec.clone()), args)?),
        };
        let mut terms: Vec<(Source, Value)> = args
            .iter()
            .enumerate()
            .map(|(k, &v)| (Source::Operand(k), v))
            .collect();
        let mut nodes: Vec<PairNode> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            let b = terms.remove(pair.j);
            let a = terms.remove(pair.i);
            let labels = |l: &[char]| l.iter().collect::<String>();
            let text = format!(
                "{},{}->{}",
                labels(&pair.a),
                labels(&pair.b),
                labels(&pair.result)
            );
            let binary = EinsumSpec::parse(&text).map_err(|source| RecordError::Op {
                step,
                op: "einsum",
                source,
            })?;
            let v = self
                .r
                .apply(TensorOp::Einsum(binary.clone()), &[a.1, b.1])?;
            nodes.push(PairNode {
                spec: binary,
                args: [a.0, b.0],
                values: [a.1, b.1],
            });
            terms.push((Source::Node(nodes.len() - 1), v));
        }
        let (_, result) = terms.pop().expect("the last contraction");
        self.trees.insert(step, nodes);
        Ok(vec![result])
    }

    /// The backward walk of a replayed einsum: each binary contraction's
    /// rule, from the last to the first, so that an einsum of `n` operands
    /// costs `2(n - 1)` binary contractions at most (one `(n-1)`-ary
    /// einsum per operand would cost `n(n - 2)`).
    fn einsum_tree(&mut self, nodes: &[PairNode], g: Value, need: &[bool]) -> Pullback {
        // Whether a node's result leads to an operand that wants a gradient.
        let mut leads = Vec::with_capacity(nodes.len());
        for node in nodes {
            let wants = node.args.map(|s| match s {
                Source::Operand(k) => need[k],
                Source::Node(m) => leads[m],
            });
            leads.push(wants[0] || wants[1]);
        }
        let mut cot: Vec<Option<Value>> = vec![None; nodes.len()];
        *cot.last_mut().expect("a contraction") = Some(g);
        let mut pulled = vec![None; need.len()];
        for (n, node) in nodes.iter().enumerate().rev() {
            let Some(c) = cot[n] else { continue };
            let wants = node.args.map(|s| match s {
                Source::Operand(k) => need[k],
                Source::Node(m) => leads[m],
            });
            let got = self.einsum(&node.spec, &node.values, c, &wants)?;
            for (source, d) in node.args.iter().zip(got) {
                match *source {
                    Source::Operand(k) => pulled[k] = d,
                    Source::Node(m) => cot[m] = d,
                }
            }
        }
        Ok(pulled)
    }

    fn einsum(&mut self, spec: &EinsumSpec, args: &[Value], g: Value, need: &[bool]) -> Pullback {
        let inputs = spec.inputs();
        let output: &[char] = spec.output();
        let mut pulled = Vec::with_capacity(args.len());
        for i in 0..args.len() {
            if !need[i] {
                pulled.push(None);
                continue;
            }
            let own = &inputs[i];
            let target = self.meta(args[i]).shape;
            // The operand's labels once each (a repeat is a diagonal).
            let mut unique: Vec<char> = Vec::with_capacity(own.len());
            for &c in own.iter() {
                if !unique.contains(&c) {
                    unique.push(c);
                }
            }
            let extent = |c: &char| target[own.iter().position(|o| o == c).expect("own")];
            let elsewhere = |c: &char| {
                output.contains(c)
                    || inputs
                        .iter()
                        .enumerate()
                        .any(|(j, l)| j != i && l.contains(c))
            };
            let kept: Vec<char> = unique.iter().copied().filter(elsewhere).collect();
            let mut operands = Vec::with_capacity(args.len());
            let mut subscripts: Vec<String> = Vec::with_capacity(args.len());
            for (j, &a) in args.iter().enumerate() {
                if j != i {
                    operands.push(self.conj(a)?);
                    subscripts.push(inputs[j].iter().collect());
                }
            }
            operands.push(g);
            subscripts.push(output.iter().collect());
            let text = format!(
                "{}->{}",
                subscripts.join(","),
                kept.iter().collect::<String>()
            );
            let d = self.einsum_op(&text, &operands)?;
            let d = if kept.len() == unique.len() {
                d
            } else {
                let dims: Vec<usize> = kept
                    .iter()
                    .map(|c| unique.iter().position(|o| o == c).expect("kept from own"))
                    .collect();
                let shape = unique.iter().map(extent).collect();
                self.op(TensorOp::BroadcastInDim { shape, dims }, &[d])?
            };
            if unique.len() == own.len() {
                pulled.push(Some(d));
                continue;
            }
            // Put on the diagonals: each repeat of a label is a fresh label
            // tied to its first by an identity.
            let used = |c: &char| output.contains(c) || inputs.iter().any(|l| l.contains(c));
            let mut free = ('A'..='Z').chain('a'..='z').filter(|c| !used(c));
            let dtype = self.meta(args[i]).dtype;
            let mut operands = vec![d];
            let mut subscripts = vec![unique.iter().collect::<String>()];
            let mut placed = String::with_capacity(own.len());
            for (k, &c) in own.iter().enumerate() {
                if !own[..k].contains(&c) {
                    placed.push(c);
                    continue;
                }
                let f = free
                    .next()
                    .ok_or(Missing::Rule(Some("no label left for a repeated one")))?;
                let n = extent(&c);
                operands.push(self.op(
                    TensorOp::Eye {
                        dtype,
                        rows: n,
                        cols: n,
                    },
                    &[],
                )?);
                subscripts.push(format!("{c}{f}"));
                placed.push(f);
            }
            let text = format!("{}->{placed}", subscripts.join(","));
            pulled.push(Some(self.einsum_op(&text, &operands)?));
        }
        Ok(pulled)
    }

    /// An einsum of `text` on `operands`, recorded.
    fn einsum_op(&mut self, text: &str, operands: &[Value]) -> Result<Value, Missing> {
        let spec = EinsumSpec::parse(text).map_err(|source| {
            Missing::Record(RecordError::Op {
                step: 0,
                op: "einsum",
                source,
            })
        })?;
        self.op(TensorOp::Einsum(spec), operands)
    }
}

/// `conj(s)`.
fn conj_scalar(s: Scalar) -> Scalar {
    match s {
        Scalar::Complex(z) => Scalar::Complex(z.conj()),
        other => other,
    }
}

/// A scalar as a value of `dtype` may take: a complex one with imaginary
/// part 0 as a real one for a real type.
fn fit(s: Scalar, dtype: DType) -> Scalar {
    match s {
        Scalar::Complex(z) if !dtype.is_complex() => Scalar::Real(z.re),
        other => other,
    }
}
