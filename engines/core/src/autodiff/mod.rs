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
mod elementwise;
mod index;
mod linalg;
mod products;
mod reduce;
mod structural;

use std::collections::HashMap;

use crate::ops::{
    BinaryOp, EinsumSpec, MatOp, Meta, ReduceOp, Scalar, SliceAxis, TensorOp, UnaryOp,
};
use crate::program::{Program, RecordError, Recorder, Value};
use crate::tensor::DType;

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
    /// use weft_core::{DType, EinsumSpec, Program, TensorOp};
    ///
    /// // L = Σ (A x)², and its gradient with respect to x.
    /// let einsum = |text| TensorOp::Einsum(EinsumSpec::parse(text).expect("a valid spec"));
    /// let loss = Program::record(|p| {
    ///     let a = p.input(DType::F64, &[3, 2]);
    ///     let x = p.input(DType::F64, &[2]);
    ///     let y = p.record_op(einsum("ij,j->i"), &[a, x])?;
    ///     let l = p.record_op(einsum("i,i->"), &[y, y])?;
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
    r: &'a Recorder,
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
        r: &Recorder,
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
                op => d.r.record_many(op.clone(), &args)?,
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
                cot.insert(value, d.r.record_op(one, &[])?);
            }
            Seeds::Cotangents(outputs) => {
                for &output in outputs {
                    let value = program.outputs()[output];
                    let m = &metas[value];
                    let seed = d.r.input(m.dtype, &m.shape);
                    let summed = match cot.get(&value) {
                        Some(&earlier) => {
                            d.r.record_op(TensorOp::Binary(BinaryOp::Add), &[earlier, seed])?
                        }
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
                    Some(&earlier) => {
                        d.r.record_op(TensorOp::Binary(BinaryOp::Add), &[earlier, c])?
                    }
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
                    d.r.record_op(
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
        Ok(self.r.record_op(op, args)?)
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
        match op {
            TensorOp::Binary(_)
            | TensorOp::BinaryScalar { .. }
            | TensorOp::Unary(_)
            | TensorOp::Cast(_)
            | TensorOp::Select
            | TensorOp::Clamp { .. }
            | TensorOp::ClampBetween => self.elementwise(op, args, out, g, need),
            TensorOp::Reduce { .. } => self.reduce(op, args, out, g, need),
            TensorOp::Matmul
            | TensorOp::Einsum(_)
            | TensorOp::Dot { .. }
            | TensorOp::Axpby { .. }
            | TensorOp::Gemm { .. } => self.products(op, args, out, g, need),
            TensorOp::Reshape(_)
            | TensorOp::Permute(_)
            | TensorOp::BroadcastTo(_)
            | TensorOp::BroadcastInDim { .. }
            | TensorOp::Reverse(_)
            | TensorOp::Slice(_)
            | TensorOp::Pad { .. }
            | TensorOp::Concatenate { .. }
            | TensorOp::Triangle { .. }
            | TensorOp::DiagEmbed { .. }
            | TensorOp::Diagonal { .. } => self.structural(op, args, out, g, need),
            TensorOp::Gather { .. }
            | TensorOp::Scatter { .. }
            | TensorOp::DynamicSlice { .. }
            | TensorOp::DynamicUpdateSlice
            | TensorOp::Compress { .. } => self.index(op, args, out, g, need),
            // No gradient flows through a comparison or an index, and a
            // creation op reads nothing.
            TensorOp::Compare(_) | TensorOp::ArgReduce { .. } => Ok(vec![None; args.len()]),
            TensorOp::Full { .. }
            | TensorOp::Eye { .. }
            | TensorOp::Arange { .. }
            | TensorOp::Random { .. } => Ok(Vec::new()),
            TensorOp::Linalg(_) => unreachable!("decompositions have their own rules"),
            // Its body is not weft's: its derivative is unknown.
            TensorOp::Kernel(_) => Err(Missing::Rule(Some(
                "a kernel of one's own has no derivative weft knows",
            ))),
        }
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
