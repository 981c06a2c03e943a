//! [`TensorError`]: every refusal of the vocabulary, naming the bad value.

use super::{element_count, DType};

/// A bad tensor, shape or argument, named in the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The number of elements does not fit the shape.
    #[error("shape {shape:?} holds {expected} elements, got {got}")]
    ElementCount {
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A tensor has another element type than expected.
    #[error("expected a {expected} tensor, got {got}")]
    DType {
        /// Expected type.
        expected: DType,
        /// The tensor's type.
        got: DType,
    },
    /// Two operands of an op have different element types.
    #[error("{op}: operands have different element types {lhs} and {rhs}")]
    MixedDTypes {
        /// The op.
        op: &'static str,
        /// Left operand type.
        lhs: DType,
        /// Right operand type.
        rhs: DType,
    },
    /// Shapes that do not broadcast together.
    #[error("{op}: shapes {lhs:?} and {rhs:?} do not broadcast (axis {axis} from the right: {l} vs {r})")]
    Broadcast {
        /// The op.
        op: &'static str,
        /// Left shape.
        lhs: Vec<usize>,
        /// Right shape.
        rhs: Vec<usize>,
        /// The mismatching axis, counted from the last.
        axis: usize,
        /// Its extent on the left.
        l: usize,
        /// Its extent on the right.
        r: usize,
    },
    /// Shapes that do not multiply as matrices.
    #[error("matmul: shapes {lhs:?} and {rhs:?} do not multiply ({reason})")]
    MatmulShapes {
        /// Left shape.
        lhs: Vec<usize>,
        /// Right shape.
        rhs: Vec<usize>,
        /// Which rule they break.
        reason: &'static str,
    },
    /// A kernel of one's own ([`crate::ops::KernelOp`]) reached an engine
    /// it was not written for.
    #[error(
        "kernel `{kernel}` runs only on the engine it was written for \
         (a cubecl kernel: a CUDA device's lane)"
    )]
    ForeignKernel {
        /// The kernel's name.
        kernel: &'static str,
    },
    /// The op is not defined for this element type.
    #[error("{op} is not defined for {dtype} tensors")]
    Unsupported {
        /// The op.
        op: &'static str,
        /// The element type.
        dtype: DType,
    },
    /// An axis argument that does not fit the tensor.
    #[error("{op}: axis {axis} of a rank-{rank} tensor is {reason}")]
    Axis {
        /// The op.
        op: &'static str,
        /// The axis given.
        axis: usize,
        /// The tensor's rank.
        rank: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A reduction with no identity over no elements.
    #[error("{op} over no elements (shape {shape:?}) is undefined")]
    EmptyReduction {
        /// The op.
        op: &'static str,
        /// The input's shape.
        shape: Vec<usize>,
    },
    /// A reshape to a shape with another element count.
    #[error("cannot reshape {from:?} ({} elements) to {to:?} ({} elements)",
        element_count(from).map_or("too many".to_owned(), |n| n.to_string()),
        element_count(to).map_or("too many".to_owned(), |n| n.to_string()))]
    Reshape {
        /// The input's shape.
        from: Vec<usize>,
        /// The shape asked for.
        to: Vec<usize>,
    },
    /// An axis order that is not a permutation of the axes.
    #[error("{perm:?} is not a permutation of the {rank} axes")]
    Permutation {
        /// The order given.
        perm: Vec<usize>,
        /// The tensor's rank.
        rank: usize,
    },
    /// An op that needs a matrix got another rank.
    #[error("{op} needs a 2-D tensor, got shape {shape:?}")]
    NotMatrix {
        /// The op.
        op: &'static str,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// An op that needs a square matrix got another.
    #[error("{op} needs a square matrix, got shape {shape:?}")]
    NotSquare {
        /// The op.
        op: &'static str,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// A matrix that does not admit the factorization.
    #[error("{op} failed: {reason}")]
    Factorization {
        /// The op.
        op: &'static str,
        /// Why, as the factorization reports it.
        reason: String,
    },
    /// A slice or pad that does not fit the tensor.
    #[error("{op} of shape {shape:?}: {reason}")]
    Slice {
        /// `slice` or `pad`.
        op: &'static str,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// What is wrong.
        reason: String,
    },
    /// Inputs that cannot be concatenated.
    #[error("concatenate: {reason}")]
    Concat {
        /// What is wrong.
        reason: String,
    },
    /// An einsum specification that is malformed or does not fit its
    /// operands. Its message shows a long specification by its two ends.
    #[error("einsum `{}`: {reason}", abridged(.spec))]
    Einsum {
        /// The specification, whole.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A tensor given to an op to write its result into is not of the
    /// result's type and shape.
    #[error("{op} into a {into_dtype} tensor of shape {into_shape:?}: its result is {dtype} of shape {shape:?}")]
    Into {
        /// The op.
        op: &'static str,
        /// The result's element type.
        dtype: DType,
        /// The result's shape.
        shape: Vec<usize>,
        /// The given tensor's element type.
        into_dtype: DType,
        /// The given tensor's shape.
        into_shape: Vec<usize>,
    },
    /// An op with several outputs was submitted where one was expected.
    #[error("{op} has {outputs} outputs; submit it with apply_many")]
    Outputs {
        /// The op.
        op: &'static str,
        /// How many outputs it has.
        outputs: usize,
    },
    /// An op was given the wrong number of inputs.
    #[error("{op} takes {expected} input(s), got {got}")]
    Arity {
        /// The op.
        op: &'static str,
        /// Inputs it takes.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// A `dot_general` whose axes do not pair up, in the caller's terms.
    #[error("dot_general of {lhs:?} and {rhs:?}: {reason}")]
    DotGeneral {
        /// The left operand's shape.
        lhs: Vec<usize>,
        /// The right operand's shape.
        rhs: Vec<usize>,
        /// What does not pair up.
        reason: String,
    },
    /// A scalar argument that must be finite (or a number) is not.
    #[error("{op}: {argument} is {value}, which must be {must}")]
    Argument {
        /// The op.
        op: &'static str,
        /// Which argument.
        argument: &'static str,
        /// Its value, as written (`inf`, `NaN`).
        value: String,
        /// What it must be.
        must: &'static str,
    },
    /// An index outside its axis (`-extent..extent`): the op fails, and
    /// no output exists.
    #[error("{op}: index {index} (element {position:?} of the indices) is out of range for axis {axis} of extent {extent}")]
    Index {
        /// `gather` or `scatter`.
        op: &'static str,
        /// The index.
        index: i64,
        /// Its place in the index tensor.
        position: Vec<usize>,
        /// The axis indexed.
        axis: usize,
        /// The axis's extent.
        extent: usize,
    },
    /// A mask with another number of `true` elements than a compression
    /// asked for.
    #[error("compress: the mask has {got} true elements, the op was made for {expected}")]
    MaskCount {
        /// The length the op was made for.
        expected: usize,
        /// The mask's true elements.
        got: usize,
    },
    /// Strides that do not fit a shape and a buffer.
    #[error("strides {strides:?} of shape {shape:?} over {len} elements: {reason}")]
    Strides {
        /// The shape.
        shape: Vec<usize>,
        /// The strides given, in elements.
        strides: Vec<usize>,
        /// Elements of the buffer.
        len: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// An integer division or remainder by zero: the op fails, and no
    /// output exists.
    #[error("{op}: integer division by zero (element {index:?} of the divisor {shape:?} is 0)")]
    DivisionByZero {
        /// `floor_div` or `rem`.
        op: &'static str,
        /// The zero's index in the divisor.
        index: Vec<usize>,
        /// The divisor's shape.
        shape: Vec<usize>,
    },
    /// A read of one element (`item`) from a tensor that holds another
    /// number of elements.
    #[error("{op}: a tensor of shape {shape:?} holds {elements} elements, not one")]
    NotOneElement {
        /// The op.
        op: &'static str,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// Elements it holds.
        elements: usize,
    },
    /// A shape too large to hold: its element or byte count overflows, or
    /// the allocator cannot provide its bytes.
    #[error("shape {shape:?} has more elements than fit in memory")]
    TooLarge {
        /// The shape.
        shape: Vec<usize>,
    },
}

/// `text` whole when short; else its first and last 40 characters around
/// an ellipsis and the count left out (a network's subscripts run to
/// thousands of characters).
fn abridged(text: &str) -> String {
    const END: usize = 40;
    let n = text.chars().count();
    if n <= 3 * END {
        return text.to_owned();
    }
    let head: String = text.chars().take(END).collect();
    let tail: String = text.chars().skip(n - END).collect();
    format!("{head} … ({} characters) … {tail}", n - 2 * END)
}
