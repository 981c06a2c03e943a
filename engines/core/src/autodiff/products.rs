//! The rules of the products: matmul, dot, axpby, gemm and einsum.

use super::{conj_scalar, Derivation, GradError, Missing, PairNode, Pullback, Source};
use crate::ops::{BinaryOp, EinsumSpec, TensorOp};
use crate::program::RecordError;
use crate::program::Value;

impl Derivation<'_> {
    /// The contributions of a step of the products to its arguments,
    /// dispatched here by [`Derivation::pullback`].
    pub(super) fn products(
        &mut self,
        op: &TensorOp,
        args: &[Value],
        out: Value,
        g: Value,
        need: &[bool],
    ) -> Pullback {
        let shape = |d: &Self, i: usize| d.meta(args[i]).shape;
        let _dtype = self.meta(out).dtype;
        Ok(match op {
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
            _ => unreachable!("pullback dispatches only the products here"),
        })
    }
}

impl Derivation<'_> {
    /// One einsum per operand: operand `i`'s cotangent is the einsum of the
    /// others (conjugated) and `g` into `i`'s labels; labels only `i` has
    /// (summed away by the forward einsum) are broadcast back after it.
    /// Replays the einsum of step `step` as the binary contractions its
    /// engine would take ([`EinsumSpec::pairwise`]), keeping them for the
    /// backward walk; as one node when an operand repeats a label.
    pub(super) fn replay_einsum(
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
            _ => return Ok(self.r.record_many(TensorOp::Einsum(spec.clone()), args)?),
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
                .record_op(TensorOp::Einsum(binary.clone()), &[a.1, b.1])?;
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
    pub(super) fn einsum_tree(&mut self, nodes: &[PairNode], g: Value, need: &[bool]) -> Pullback {
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

    pub(super) fn einsum(
        &mut self,
        spec: &EinsumSpec,
        args: &[Value],
        g: Value,
        need: &[bool],
    ) -> Pullback {
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
    pub(super) fn einsum_op(&mut self, text: &str, operands: &[Value]) -> Result<Value, Missing> {
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
