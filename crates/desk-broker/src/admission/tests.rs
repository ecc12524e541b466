//! Unit tests of the per-session queue: one turn at a time, the bound, a waiter that goes
//! away, and a queue of zero.

use std::sync::Arc;
use std::time::Duration;

use super::Admission;
use crate::error::BrokerError;
use crate::ids::sid;

#[tokio::test]
async fn one_turn_at_a_time_and_a_bounded_queue() {
    let admission = Arc::new(Admission::default());
    let first = admission.enter(&sid("s"), 1).await.unwrap();
    // The second waits (one place in the queue), the third is refused at once.
    let waiting = {
        let admission = Arc::clone(&admission);
        tokio::spawn(async move { admission.enter(&sid("s"), 1).await.map(|_turn| ()) })
    };
    while admission.n_holders(&sid("s")) < 2 {
        tokio::task::yield_now().await;
    }
    assert!(matches!(
        admission.enter(&sid("s"), 1).await,
        Err(BrokerError::SessionBusy(_))
    ));
    // Another session is not affected.
    let other = admission.enter(&sid("t"), 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        !waiting.is_finished(),
        "the second waits for the first turn"
    );
    drop(first);
    waiting.await.unwrap().unwrap();
    drop(other);
    assert_eq!(admission.n_holders(&sid("s")), 0);
    assert!(admission.lock().is_empty(), "idle sessions keep no entry");
}

#[tokio::test]
async fn a_request_that_goes_away_while_waiting_leaves_the_queue() {
    let admission = Arc::new(Admission::default());
    let first = admission.enter(&sid("s"), 1).await.unwrap();
    let abandoned =
        tokio::time::timeout(Duration::from_millis(10), admission.enter(&sid("s"), 1)).await;
    assert!(abandoned.is_err(), "it was still waiting");
    assert_eq!(admission.n_holders(&sid("s")), 1);
    // Its place is free again.
    let waiting = {
        let admission = Arc::clone(&admission);
        tokio::spawn(async move { admission.enter(&sid("s"), 1).await.map(|_turn| ()) })
    };
    drop(first);
    waiting.await.unwrap().unwrap();
    assert!(admission.lock().is_empty());
}

#[tokio::test]
async fn a_zero_queue_admits_only_the_running_request() {
    let admission = Arc::new(Admission::default());
    let first = admission.enter(&sid("s"), 0).await.unwrap();
    assert!(matches!(
        admission.enter(&sid("s"), 0).await,
        Err(BrokerError::SessionBusy(_))
    ));
    drop(first);
    let _again = admission.enter(&sid("s"), 0).await.unwrap();
}
