//! Host scalars out of resident tensors: `item` and `items` read what the
//! ops computed in one op, refuse at the call what cannot be a scalar of
//! the asked type, and lose nothing.

use weft::{error::TensorError, DType, OpError, Runtime, Tensor, TicketError};
use weft_tests::{wait, wait_ok};

/// Ops submitted on every lane of the runtime so far.
fn submitted(rt: &Runtime) -> u64 {
    (rt.stats().actors.iter())
        .flat_map(|a| &a.lanes)
        .map(|l| l.ops.submitted)
        .sum()
}

#[test]
fn item_and_items_read_the_computed_scalars_in_one_op() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane
        .upload(Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap())
        .unwrap();
    let squared = lane.dot(&x, &x).unwrap();
    let total = lane.sum_all(&x).unwrap();
    let one_by_one = lane
        .upload(Tensor::from_vec(vec![-1.5f64], &[1, 1]).unwrap())
        .unwrap();
    assert_eq!(wait_ok(lane.item::<f64>(&squared).unwrap()), 25.0);
    assert_eq!(wait_ok(lane.item::<f64>(&one_by_one).unwrap()), -1.5);
    let before = submitted(&rt);
    let ticket = lane.items::<f64>(&[&total, &squared, &one_by_one]).unwrap();
    assert_eq!(submitted(&rt) - before, 1, "three scalars, one op");
    assert_eq!(wait_ok(ticket), [7.0, 25.0, -1.5]);
    let flag = lane.upload(Tensor::scalar(true)).unwrap();
    assert!(wait_ok(lane.item::<bool>(&flag).unwrap()));
    assert_eq!(wait_ok(lane.items::<f64>(&[]).unwrap()), Vec::<f64>::new());
    rt.shutdown().expect("shutdown");
}

#[test]
fn what_is_not_a_scalar_of_the_type_is_refused_at_the_call_and_loses_nothing() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let other = weft_tests::unpinned_pair().build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let v = lane.ones(DType::F64, &[2, 3]).unwrap();
    let s = lane.upload(Tensor::scalar(2.0f32)).unwrap();
    let empty = lane.zeros(DType::F64, &[0]).unwrap();
    let before = submitted(&rt);
    let err = lane.item::<f64>(&v).unwrap_err();
    assert!(
        matches!(
            &err,
            OpError::Tensor(TensorError::NotOneElement { elements: 6, .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "item: a tensor of shape [2, 3] holds 6 elements, not one"
    );
    let err = lane.item::<f64>(&empty).unwrap_err();
    assert!(err.to_string().contains("holds 0 elements"), "{err}");
    let err = lane.items::<f64>(&[&s]).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::Tensor(TensorError::DType {
                expected: DType::F64,
                got: DType::F32
            })
        ),
        "{err:?}"
    );
    let far = other
        .lane(1)
        .unwrap()
        .upload(Tensor::scalar(1.0f64))
        .unwrap();
    let err = lane.item::<f64>(&far).unwrap_err();
    assert!(matches!(err, OpError::ForeignHandle { .. }), "{err:?}");
    let near = other.lane(1).unwrap();
    let err = near.item::<f64>(&other.lane(0).unwrap().upload(Tensor::scalar(1.0)).unwrap());
    assert!(matches!(err, Err(OpError::WrongDomain { .. })), "{err:?}");
    assert_eq!(submitted(&rt), before, "nothing submitted");
    // Nothing lost: the tensors are there and read.
    assert_eq!(wait_ok(lane.item::<f32>(&s).unwrap()), 2.0);
    assert_eq!(wait_ok(lane.download(&v).unwrap()).len(), 6);
    other.shutdown().expect("shutdown");
    rt.shutdown().expect("shutdown");
}

#[test]
fn an_item_of_a_failed_op_fails_its_ticket() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(Tensor::scalar(1.0f64)).unwrap();
    let good = lane.upload(Tensor::scalar(2.0f64)).unwrap();
    let id = x.id();
    wait_ok(
        lane.run(move |e| e.store_mut().remove(id).is_some())
            .unwrap(),
    );
    let bad = lane.add(&x, &x).expect("submitted");
    let err = wait(lane.items::<f64>(&[&good, &bad]).unwrap()).unwrap_err();
    assert!(matches!(err, TicketError::DependencyFailed(_)), "{err:?}");
    assert_eq!(wait_ok(lane.item::<f64>(&good).unwrap()), 2.0);
    rt.shutdown().expect("shutdown");
}
