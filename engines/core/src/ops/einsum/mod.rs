//! `einsum` with NumPy subscripts: parsing, checking, and the one lowering
//! (to diagonals, sums, permutations and batched GEMM, in a pairwise
//! order: the caller's path, or a greedy one) that every backend runs
//! through its [`Contraction`] primitives.
//!
//! A whole tensor network is one einsum: any number of operands, and
//! labels beyond ASCII letters (digits and any non-ASCII character, as
//! opt_einsum's symbols are), so a network written for opt_einsum or
//! NumPy's `einsum_path` is taken as it is, with its path if it has one.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::layout::View;
use crate::ops::Meta;
use crate::tensor::{element_count, TensorError};

mod lower;
mod path;

use lower::Term;

/// A parsed einsum specification: one label list per operand and the
/// output's labels. Cheap to clone (its parts are shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    inputs: Arc<[Vec<char>]>,
    output: Arc<[char]>,
    text: Arc<str>,
    /// The contraction order the caller gave, if any ([`Spec::with_path`]).
    path: Option<Arc<[(usize, usize)]>>,
}

/// Specifications parsed on this thread, by text: a lane's eager einsums
/// repeat the same few strings, and a hit costs one hash and a clone.
const PARSED_PER_THREAD: usize = 256;

thread_local! {
    static PARSED: RefCell<HashMap<Box<str>, Spec>> = RefCell::new(HashMap::new());
}

/// Whether `c` is a label: a letter or digit of any script, or any other
/// character outside ASCII (opt_einsum's symbols past the 52 letters are
/// such characters, `×` and `÷` among them). ASCII punctuation is not:
/// `,`, `-`, `>` and `.` are the syntax.
pub fn is_label(c: char) -> bool {
    c.is_alphanumeric() || !(c.is_ascii() || c.is_whitespace() || c.is_control())
}

/// One part of a subscript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Label(char),
    Ellipsis,
}

/// The subscripts of one operand or of the output.
type Subscript = Vec<Token>;

/// The subscripts of `text` as tokens: one list per operand, and the
/// output's if it has `->`.
fn tokens(text: &str) -> Result<(Vec<Subscript>, Option<Subscript>), TensorError> {
    let bad = |reason: String| TensorError::Einsum {
        spec: text.to_owned(),
        reason,
    };
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match compact.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (&compact[..], None),
    };
    let list = |s: &str| -> Result<Vec<Token>, TensorError> {
        let mut out = Vec::new();
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("...") {
                if out.contains(&Token::Ellipsis) {
                    return Err(bad(format!("`{s}` has two ellipses")));
                }
                out.push(Token::Ellipsis);
                rest = after;
            } else if is_label(c) {
                out.push(Token::Label(c));
                rest = &rest[c.len_utf8()..];
            } else {
                return Err(bad(format!(
                    "`{c}` is not a label (labels are letters, digits and non-ASCII characters)"
                )));
            }
        }
        Ok(out)
    };
    let inputs = lhs.split(',').map(list).collect::<Result<Vec<_>, _>>()?;
    let output = rhs.map(list).transpose()?;
    Ok((inputs, output))
}

impl Spec {
    /// Each operand's labels, in order.
    pub fn inputs(&self) -> &[Vec<char>] {
        &self.inputs
    }

    /// The output's labels.
    pub fn output(&self) -> &[char] {
        &self.output
    }

    /// Parses `"ij,jk->ik"`; without `->`, the output is every label that
    /// appears once, in alphabetical order (NumPy's implicit mode).
    ///
    /// # Errors
    ///
    /// [`TensorError::Einsum`] naming the bad part of the string.
    pub fn parse(text: &str) -> Result<Spec, TensorError> {
        let known = PARSED
            .try_with(|parsed| parsed.borrow().get(text).cloned())
            .ok()
            .flatten();
        if let Some(spec) = known {
            return Ok(spec);
        }
        let spec = Spec::parse_new(text)?;
        let _ = PARSED.try_with(|parsed| {
            let mut parsed = parsed.borrow_mut();
            if parsed.len() >= PARSED_PER_THREAD {
                parsed.clear();
            }
            parsed.insert(text.into(), spec.clone());
        });
        Ok(spec)
    }

    fn parse_new(text: &str) -> Result<Spec, TensorError> {
        let (inputs, output) = tokens(text)?;
        let plain = |list: Vec<Token>| -> Result<Vec<char>, TensorError> {
            list.into_iter()
                .map(|t| match t {
                    Token::Label(c) => Ok(c),
                    Token::Ellipsis => Err(TensorError::Einsum {
                        spec: text.to_owned(),
                        reason: "an ellipsis (`...`) needs the operands' shapes: parse with \
                                 `EinsumSpec::parse_for` (lanes and programs do)"
                            .into(),
                    }),
                })
                .collect()
        };
        let inputs = inputs
            .into_iter()
            .map(plain)
            .collect::<Result<Vec<_>, _>>()?;
        let output = output.map(plain).transpose()?;
        Spec::build(text, inputs, output)
    }

    /// Parses `text` for operands of these shapes, as NumPy does: an
    /// ellipsis (`...`) stands for the axes an operand has beyond its
    /// labels, broadcast across the operands right-aligned (an operand may
    /// have fewer of them, or none), and an axis of extent 1 broadcasts
    /// against the same label's extent in another operand (`ij,ij->j` of
    /// `[1, 3]` and `[4, 3]`). The result is an ordinary specification
    /// whose labels are those axes made explicit; its text is `text`.
    ///
    /// # Errors
    ///
    /// As [`Spec::parse`]; [`TensorError::Einsum`] for an operand with
    /// fewer axes than labels, an explicit output without `...` while the
    /// operands have broadcast axes, or more axes than there are labels.
    pub fn parse_for(text: &str, shapes: &[&[usize]]) -> Result<Spec, TensorError> {
        if !text.contains("...") {
            let spec = Spec::parse(text)?;
            // The common case: nothing to broadcast (or an arity or rank
            // mismatch, which `infer` reports in its own words).
            // Without an axis of extent 1 nothing broadcasts: the eager
            // path pays no walk of the extents here (`infer` makes it).
            let fits = !shapes.iter().any(|s| s.contains(&1))
                || spec.inputs.len() != shapes.len()
                || spec
                    .inputs
                    .iter()
                    .zip(shapes)
                    .any(|(l, s)| l.len() != s.len())
                || spec.extents(shapes.iter().copied()).is_ok();
            if fits {
                return Ok(spec);
            }
        }
        let bad = |reason: String| TensorError::Einsum {
            spec: text.to_owned(),
            reason,
        };
        let (inputs, output) = tokens(text)?;
        if inputs.len() != shapes.len() {
            return Err(bad(format!(
                "{} operands in the subscripts, {} given",
                inputs.len(),
                shapes.len()
            )));
        }
        // Labels for the axes made explicit: letters the text does not
        // use, ASCII first, then from Latin Extended and Greek on.
        let mut unused = ('A'..='Z')
            .chain('a'..='z')
            .chain('\u{100}'..='\u{2FF}')
            .chain('\u{370}'..='\u{52F}')
            .filter(|&c| c.is_alphabetic() && !text.contains(c));
        let mut fresh = || {
            unused
                .next()
                .ok_or_else(|| bad("more axes than there are labels to name them".into()))
        };
        // Broadcast axes per operand, and the most of any.
        let mut ranks = Vec::with_capacity(inputs.len());
        for (i, (list, shape)) in inputs.iter().zip(shapes).enumerate() {
            let labels = list.iter().filter(|t| matches!(t, Token::Label(_))).count();
            let has = list.contains(&Token::Ellipsis);
            ranks.push(match (has, shape.len().checked_sub(labels)) {
                (true, Some(r)) => r,
                (true, None) => {
                    return Err(bad(format!(
                        "operand {i} has {} axes but {labels} labels besides `...`",
                        shape.len()
                    )))
                }
                (false, _) => 0,
            });
        }
        let broadcast = ranks.iter().copied().max().unwrap_or(0);
        let ellipsis: Vec<char> = (0..broadcast).map(|_| fresh()).collect::<Result<_, _>>()?;
        let expand = |list: &[Token], rank: usize| -> Vec<char> {
            list.iter()
                .flat_map(|t| match t {
                    Token::Label(c) => vec![*c],
                    Token::Ellipsis => ellipsis[broadcast - rank..].to_vec(),
                })
                .collect()
        };
        let mut labels: Vec<Vec<char>> = inputs
            .iter()
            .zip(&ranks)
            .map(|(list, &r)| expand(list, r))
            .collect();
        let output = match output {
            Some(out) => {
                if broadcast > 0 && !out.contains(&Token::Ellipsis) {
                    return Err(bad(format!(
                        "the operands have {broadcast} axes under `...` but the output has no `...`"
                    )));
                }
                expand(&out, broadcast)
            }
            // NumPy's implicit output: the broadcast axes, then the labels
            // that appear once, in order.
            None => {
                let mut count: BTreeMap<char, usize> = BTreeMap::new();
                for &c in labels.iter().flatten() {
                    *count.entry(c).or_default() += 1;
                }
                let once = count
                    .iter()
                    .filter(|&(c, &n)| n == 1 && !ellipsis.contains(c))
                    .map(|(&c, _)| c);
                ellipsis.iter().copied().chain(once).collect()
            }
        };
        // An axis of extent 1 against a longer one of its label is that
        // operand's own label, summed over its one element.
        let mut longest: BTreeMap<char, usize> = BTreeMap::new();
        for (list, shape) in labels.iter().zip(shapes) {
            if list.len() == shape.len() {
                for (&c, &d) in list.iter().zip(shape.iter()) {
                    let e = longest.entry(c).or_insert(d);
                    *e = (*e).max(d);
                }
            }
        }
        for (list, shape) in labels.iter_mut().zip(shapes) {
            if list.len() != shape.len() {
                continue; // `infer` names it
            }
            for (c, &d) in list.iter_mut().zip(shape.iter()) {
                if d == 1 && longest[c] > 1 {
                    *c = fresh()?;
                }
            }
        }
        Spec::build(text, labels, Some(output))
    }

    /// The specification of these labels; the output, if not given, is
    /// every label that appears once, in alphabetical order.
    fn build(
        text: &str,
        inputs: Vec<Vec<char>>,
        output: Option<Vec<char>>,
    ) -> Result<Spec, TensorError> {
        let bad = |reason: String| TensorError::Einsum {
            spec: text.to_owned(),
            reason,
        };
        let mut count: BTreeMap<char, usize> = BTreeMap::new();
        for labels in &inputs {
            for &c in labels {
                *count.entry(c).or_default() += 1;
            }
        }
        let output = match output {
            Some(out) => {
                for (i, c) in out.iter().enumerate() {
                    if out[..i].contains(c) {
                        return Err(bad(format!("output label `{c}` appears twice")));
                    }
                    if !count.contains_key(c) {
                        return Err(bad(format!("output label `{c}` is in no operand")));
                    }
                }
                out
            }
            None => count
                .iter()
                .filter(|&(_, &n)| n == 1)
                .map(|(&c, _)| c)
                .collect(),
        };
        Ok(Spec {
            inputs: inputs.into(),
            output: output.into(),
            text: text.into(),
            path: None,
        })
    }

    /// This specification contracted in the order `path` gives, as
    /// opt_einsum writes one: each pair names two places in the current
    /// list of terms (the operands first), which are taken out, and their
    /// contraction is appended at the end. A path has one pair fewer than
    /// there are operands.
    ///
    /// # Errors
    ///
    /// [`TensorError::Einsum`] naming the first pair that is not two
    /// distinct places of the list at its step, or a path of the wrong
    /// length.
    pub fn with_path(&self, path: &[(usize, usize)]) -> Result<Spec, TensorError> {
        let bad = |reason: String| TensorError::Einsum {
            spec: self.text.to_string(),
            reason,
        };
        let n = self.inputs.len();
        if path.len() + 1 != n.max(1) {
            return Err(bad(format!(
                "a path of {} pairs for {n} operands (it needs {})",
                path.len(),
                n.saturating_sub(1)
            )));
        }
        let mut sorted = Vec::with_capacity(path.len());
        for (step, &(i, j)) in path.iter().enumerate() {
            let terms = n - step;
            if i == j || i >= terms || j >= terms {
                return Err(bad(format!(
                    "path step {step}, ({i}, {j}): not two places of the {terms} terms left"
                )));
            }
            sorted.push((i.min(j), i.max(j)));
        }
        Ok(Spec {
            path: Some(sorted.into()),
            ..self.clone()
        })
    }

    /// The path given with [`Spec::with_path`], if one was.
    pub fn given_path(&self) -> Option<&[(usize, usize)]> {
        self.path.as_deref()
    }

    /// The specification as it was written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Number of operands.
    pub fn arity(&self) -> usize {
        self.inputs.len()
    }

    /// The output's type and shape for operands of these types and shapes.
    ///
    /// # Errors
    ///
    /// [`TensorError::Einsum`] for a subscript whose length is not its
    /// operand's rank, or a label with two extents;
    /// [`TensorError::MixedDTypes`].
    pub fn infer(&self, inputs: &[Meta]) -> Result<Meta, TensorError> {
        let extents = self.extents(inputs.iter().map(|m| &m.shape[..]))?;
        for m in &inputs[1..] {
            if m.dtype != inputs[0].dtype {
                return Err(TensorError::MixedDTypes {
                    op: "einsum",
                    lhs: inputs[0].dtype,
                    rhs: m.dtype,
                });
            }
        }
        let shape: Vec<usize> = self.output.iter().map(|c| extents[c]).collect();
        if element_count(&shape).is_none() {
            return Err(TensorError::TooLarge { shape });
        }
        Ok(Meta {
            dtype: inputs[0].dtype,
            shape,
        })
    }

    /// The extent of each label over operands of these shapes: one
    /// extent per label (1 broadcasts), as the shape rules check it.
    pub fn extents<'a>(
        &self,
        shapes: impl Iterator<Item = &'a [usize]>,
    ) -> Result<BTreeMap<char, usize>, TensorError> {
        let mut extents = BTreeMap::new();
        for (i, shape) in shapes.enumerate() {
            let labels = &self.inputs[i];
            if labels.len() != shape.len() {
                return Err(TensorError::Einsum {
                    spec: self.text.to_string(),
                    reason: format!(
                        "operand {i} has {} axes but subscript `{}`",
                        shape.len(),
                        labels.iter().collect::<String>()
                    ),
                });
            }
            for (&c, &d) in labels.iter().zip(shape) {
                if let Some(&e) = extents.get(&c) {
                    if e != d {
                        return Err(TensorError::Einsum {
                            spec: self.text.to_string(),
                            reason: format!("label `{c}` has extents {e} and {d}"),
                        });
                    }
                }
                extents.insert(c, d);
            }
        }
        Ok(extents)
    }

    /// Evaluates the contraction with `backend`'s primitives: the one
    /// lowering (diagonals, sums, permutations, batched GEMM in a greedy
    /// pairwise order) that every engine shares. `inputs` must fit
    /// [`Spec::infer`].
    ///
    /// # Errors
    ///
    /// As [`Spec::infer`], and whatever `backend` fails with.
    pub fn contract<B: Contraction>(
        &self,
        backend: &mut B,
        inputs: Vec<B::Value>,
    ) -> Result<B::Value, B::Error> {
        let extents = self.extents(inputs.iter().map(|v| B::shape(v)))?;
        let path = self.order(&extents);
        let mut terms: Vec<Term<B>> = Vec::new();
        for (labels, v) in self.inputs.iter().zip(inputs) {
            terms.push(Term::diagonal(backend, labels, v)?);
        }
        for &(i, j) in path.iter() {
            let b = terms.remove(j);
            let a = terms.remove(i);
            let keep = self.needed(&terms, &a.labels, &b.labels);
            // The last product may lay its result out as the output.
            let last = terms.is_empty().then_some(&self.output[..]);
            terms.push(Term::contract(backend, a, b, &keep, last)?);
        }
        let last = terms.pop().expect("at least one operand");
        last.finish(backend, &self.output)
    }

    /// Labels still needed after contracting `a` with `b`: in the output or
    /// in another remaining term.
    fn needed<T: AsRef<[char]>>(&self, rest: &[T], a: &[char], b: &[char]) -> Vec<char> {
        a.iter()
            .chain(b)
            .copied()
            .filter(|c| self.output.contains(c) || rest.iter().any(|t| t.as_ref().contains(c)))
            .collect()
    }

    /// The pairwise order [`Spec::contract`] takes for operands of
    /// `shapes`, as binary contractions: each takes terms `i < j` out of
    /// the list (operands first, results pushed last) and gives the labels
    /// `result`, in the order the contraction makes them (batch, then
    /// `i`'s own, then `j`'s own), the last one in the output's order.
    /// `None` when an operand repeats a label (its diagonal comes first).
    ///
    /// # Errors
    ///
    /// As [`Spec::extents`].
    pub fn pairwise(&self, shapes: &[&[usize]]) -> Result<Option<Vec<Pair>>, TensorError> {
        let extents = self.extents(shapes.iter().copied())?;
        if self
            .inputs
            .iter()
            .any(|l| l.iter().enumerate().any(|(k, c)| l[..k].contains(c)))
        {
            return Ok(None);
        }
        let mut terms: Vec<Vec<char>> = self.inputs.to_vec();
        let mut pairs = Vec::with_capacity(terms.len().saturating_sub(1));
        for &(i, j) in self.order(&extents).iter() {
            let b = terms.remove(j);
            let a = terms.remove(i);
            let keep = self.needed(&terms, &a, &b);
            let result: Vec<char> = if terms.is_empty() {
                self.output.to_vec()
            } else {
                let kept = |c: &char| keep.contains(c);
                let batch = a.iter().filter(|c| b.contains(c) && kept(c));
                let a_own = a.iter().filter(|c| !b.contains(c) && kept(c));
                let b_own = b.iter().filter(|c| !a.contains(c) && kept(c));
                batch.chain(a_own).chain(b_own).copied().collect()
            };
            terms.push(result.clone());
            pairs.push(Pair { i, j, a, b, result });
        }
        Ok(Some(pairs))
    }
}

/// The primitives an engine lends [`Spec::contract`]. `Value` is the
/// engine's tensor (or a borrow of a resident one).
pub trait Contraction {
    /// A tensor of the engine.
    type Value;
    /// What the engine's primitives fail with.
    type Error: From<TensorError>;
    /// The value's shape.
    fn shape(value: &Self::Value) -> &[usize];
    /// Copies out a strided view of `value` (a diagonal over repeated labels).
    fn view(&mut self, value: Self::Value, view: &View) -> Result<Self::Value, Self::Error>;
    /// Sums `value` over `axes`, dropping them.
    fn sum(&mut self, value: Self::Value, axes: &[usize]) -> Result<Self::Value, Self::Error>;
    /// Reorders axes: output axis `i` is input axis `perm[i]`.
    fn permute(&mut self, value: Self::Value, perm: &[usize]) -> Result<Self::Value, Self::Error>;
    /// `[nb, m, k] @ [nb, k, n]`, reading `a` and `b` (row-major) as such,
    /// giving a value of shape `out` (`nb·m·n` elements). `batched[i]` says
    /// whether operand `i` holds a matrix per batch (`nb·m·k` elements for
    /// `a`) or one matrix read by every batch (`m·k`: it is broadcast, its
    /// batch stride is 0).
    fn batched_matmul(
        &mut self,
        a: &Self::Value,
        b: &Self::Value,
        dims: [usize; 4],
        batched: [bool; 2],
        out: Vec<usize>,
    ) -> Result<Self::Value, Self::Error>;
}

/// One binary contraction of [`Spec::pairwise`]'s order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The first term's place in the list.
    pub i: usize,
    /// The second's (`i < j`), before the first is taken out.
    pub j: usize,
    /// The first term's labels.
    pub a: Vec<char>,
    /// The second's.
    pub b: Vec<char>,
    /// The result's.
    pub result: Vec<char>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_letters_digits_and_non_ascii_characters() {
        let s = Spec::parse("aÁ,Á×3->a×3").unwrap();
        assert_eq!(s.inputs(), &[vec!['a', 'Á'], vec!['Á', '×', '3']]);
        assert_eq!(s.output(), &['a', '×', '3']);
        let s = Spec::parse("bЊ,bА->ЊА").unwrap();
        assert_eq!(s.arity(), 2);
        for (spec, bad) in [("ij,j!->i", '!'), ("i;j->ij", ';'), ("i j,(j)", '(')] {
            let err = Spec::parse(spec).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}` is not a label")), "{err}");
        }
    }

    #[test]
    fn a_long_specification_is_shown_by_its_ends() {
        let text: String = (0..400)
            .map(|i| format!("{}{}", label(i), label(i + 1)))
            .collect::<Vec<_>>()
            .join(",");
        let spec = format!("{text}->!");
        let err = Spec::parse(&spec).unwrap_err().to_string();
        assert!(err.len() < 300, "{err}");
        assert!(err.contains(" characters) … "), "{err}");
        assert!(err
            .ends_with("`!` is not a label (labels are letters, digits and non-ASCII characters)"));
        let short = Spec::parse("ij,jk->kk").unwrap_err().to_string();
        assert_eq!(short, "einsum `ij,jk->kk`: output label `k` appears twice");
    }

    /// Label `i` of a network: CJK ideographs, as many as wanted.
    fn label(i: usize) -> char {
        char::from_u32(0x4E00 + i as u32).unwrap()
    }

    #[test]
    fn a_given_path_is_checked_and_followed() {
        let s = Spec::parse("ab,bc,cd->ad").unwrap();
        let shapes: [&[usize]; 3] = [&[2, 3], &[3, 4], &[4, 5]];
        // Right to left: (1, 2) first, then the first operand with it.
        let along = s.with_path(&[(2, 1), (0, 1)]).unwrap();
        assert_eq!(along.given_path(), Some(&[(1, 2), (0, 1)][..]));
        let pairs = along.pairwise(&shapes).unwrap().unwrap();
        assert_eq!(
            (pairs[0].a.clone(), pairs[0].b.clone()),
            (vec!['b', 'c'], vec!['c', 'd'])
        );
        assert_eq!(pairs[1].result, vec!['a', 'd']);
        // Its cost as opt_einsum counts it: 3·4·5 and 2·3·5 multiply-adds.
        assert_eq!(
            s.path_cost(&shapes, &[(1, 2), (0, 1)]).unwrap(),
            (2 * 60 + 2 * 30, 15)
        );
        for (path, want) in [
            (
                vec![(0, 1)],
                "a path of 1 pairs for 3 operands (it needs 2)",
            ),
            (vec![(0, 0), (0, 1)], "path step 0, (0, 0)"),
            (
                vec![(0, 1), (0, 2)],
                "path step 1, (0, 2): not two places of the 2 terms left",
            ),
        ] {
            let err = s.with_path(&path).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        // Specifications with and without a path differ.
        assert_ne!(s, along);
    }

    #[test]
    fn the_greedy_path_plans_hundreds_of_operands() {
        // A ring of 400 matrices, each label shared by two neighbours.
        let n = 400;
        let terms: Vec<String> = (0..n)
            .map(|i| format!("{}{}", label(i), label((i + 1) % n)))
            .collect();
        let s = Spec::parse(&format!("{}->", terms.join(","))).unwrap();
        let shapes: Vec<&[usize]> = vec![&[2, 2]; n];
        let path = s.greedy_path(&shapes).unwrap();
        assert_eq!(path.len(), n - 1);
        let (flops, largest) = s.path_cost(&shapes, &path).unwrap();
        // Along the ring, no term grows past a 2×2 matrix.
        assert_eq!(largest, 4);
        assert!(flops <= 2 * 8 * n as u128, "{flops}");
        // A network of two parts: each contracted, the one that frees
        // more memory first (35 − 30 − 42 against 8 − 6 − 12), and the
        // outer product of the two last.
        let s = Spec::parse("ab,bc,de,ef->acdf").unwrap();
        let shapes: [&[usize]; 4] = [&[2, 3], &[3, 4], &[5, 6], &[6, 7]];
        let path = s.greedy_path(&shapes).unwrap();
        assert_eq!(path, vec![(2, 3), (0, 1), (0, 1)]);
    }
}
