//! The stale-balance example: two concurrent charges leave the right balance
//! under every interleaving, and a late payment reply is discarded.

#![cfg(not(turno_loom))]

#[path = "../examples/stale_balance.rs"]
mod example;

use std::time::Duration;

use example::ChargeOutcome;

#[test]
fn two_concurrent_charges_leave_the_right_balance_under_every_seed() {
    let mut orders = std::collections::BTreeSet::<(u64, u64)>::new();
    for seed in 0..50 {
        let [a, b] = example::two_charges(seed, 100, 30, 50, Duration::from_millis(300)).outcomes;
        let (a, b) = (a.expect("answered"), b.expect("answered"));
        // Whichever ran first, the second saw the first's debit.
        let finals = match (&a, &b) {
            (ChargeOutcome::Paid { balance: x }, ChargeOutcome::Paid { balance: y }) => (*x, *y),
            other => panic!("seed {seed}: {other:?}"),
        };
        // 30 first: 70 then 20. 50 first: 50 then 20. Never 70 and 50.
        assert!(
            finals == (70, 20) || finals == (20, 50),
            "seed {seed}: {finals:?}"
        );
        orders.insert(finals);
    }
    assert_eq!(orders.len(), 2, "both orders were exercised");
}

#[test]
fn the_second_charge_sees_the_first_debit_and_is_refused() {
    let [a, b] = example::two_charges(3, 100, 60, 60, Duration::from_millis(300)).outcomes;
    let mut outcomes = vec![a.unwrap(), b.unwrap()];
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(
        outcomes,
        vec![
            ChargeOutcome::Insufficient,
            ChargeOutcome::Paid { balance: 40 }
        ]
    );
}

#[test]
fn a_gateway_slower_than_the_timeout_gives_unknown_and_its_late_reply_is_stale() {
    let run = example::two_charges(5, 100, 30, 50, Duration::from_secs(3));
    // Both time out (one after the other: the second waited in the stash),
    // and the two late receipts never touch the balance.
    assert_eq!(
        run.outcomes,
        [Some(ChargeOutcome::Unknown), Some(ChargeOutcome::Unknown)]
    );
    assert_eq!(run.stale_replies, 2);
}
