//! Durable mailboxes on the simulated broker, over many seeds: three
//! accounts (one per policy) on a receiving node that crashes (also between
//! applying a message and acknowledging it), pauses and is cut off, two
//! senders that send again with the same message id after `Unknown`, and
//! a network that loses and duplicates deliveries, publishes and acks.
//! After each seed: every stored message was applied exactly once,
//! dead-lettered or evicted by keep-newest, never two of these; nothing
//! refused was applied; each account applied in stream order; the books
//! balance. `DURABLE_SEED=<n> cargo test -p turno-cluster durable::tests`
//! replays one seed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use turno::{Actor, Context, DetSystem, Props, System};

use super::*;
use crate::sim::{ClientState, Faults, Rng, SimBroker, SimTransport};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pay {
    id: u64,
    amount: u64,
    /// A message whose application always fails: never acknowledged, so it
    /// must end in the dead letters.
    poison: bool,
}

/// The account's committed state: what survives a crash (a database row).
#[derive(Debug, Default)]
struct Row {
    balance: u64,
    applied: u64,
    /// (stream sequence, message id) of each application, in order.
    log: Vec<(u64, u64)>,
}

struct Account {
    row: Arc<Mutex<Row>>,
    /// The injected bug: apply without the applied-sequence check.
    bug: bool,
}

impl Actor for Account {
    type Msg = Durable<Pay>;
    fn handle(&mut self, _: &mut Context<'_, Self>, d: Durable<Pay>) {
        let Ok(mut row) = self.row.lock() else { return };
        let fresh = if self.bug && d.delivery() > 1 && !d.msg().poison {
            Some(d.msg())
        } else {
            d.fresh(row.applied)
        };
        if let Some(p) = fresh {
            if p.poison {
                // The application fails: no commit, no ack.
                return;
            }
            // State and applied sequence in one commit.
            row.balance += p.amount;
            row.applied = d.seq();
            row.log.push((d.seq(), p.id));
        }
        drop(row);
        d.ack();
    }
}

const POLICIES: [DurablePolicy; 3] = [
    DurablePolicy::KeepNewest(2),
    DurablePolicy::KeepOldest(3),
    DurablePolicy::Reject(2),
];

fn spec(i: usize) -> DurableSpec {
    DurableSpec::new("bank", format!("/acct-{i}/x.y"), POLICIES[i])
        .ack_wait(Duration::from_millis(40))
        .max_deliver(4)
}

struct Receiver {
    t: SimTransport,
    sys: DetSystem,
    boxes: Vec<DurableMailbox<Pay>>,
}

fn start_receiver(broker: &SimBroker, rows: &[Arc<Mutex<Row>>], bug: bool, n: u64) -> Receiver {
    let mut t = broker.transport(&format!("bank#{n}"), Duration::ZERO);
    let sys = DetSystem::new(n);
    let mut boxes = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let row = row.clone();
        let addr = sys
            .spawn(Props::new().name(format!("acct-{i}")), move || Account {
                row: row.clone(),
                bug,
            })
            .expect("spawn");
        boxes.push(DurableMailbox::open(&mut t, spec(i), addr).expect("open"));
    }
    Receiver { t, sys, boxes }
}

/// What happened over the seeds, to check that every path was taken.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    stored: u64,
    duplicate: u64,
    dropped: u64,
    rejected: u64,
    unknown: u64,
    unsent: u64,
    redelivered: u64,
    skipped: u64,
    dead_lettered: u64,
    evicted: u64,
    crashes_between_apply_and_ack: u64,
}

fn run_seed(seed: u64, bug: bool) -> Result<Seen, String> {
    let mut rng = Rng::new(seed ^ 0xD0AB);
    let lean = rng.below(4);
    let faults = Faults {
        drop: if lean == 0 { 150 } else { rng.below(60) as u32 },
        duplicate: if lean == 1 { 200 } else { rng.below(60) as u32 },
        latency: Duration::from_micros(100),
        jitter: Duration::ZERO,
    };
    let crash_chance = if lean == 2 { 25 } else { 6 };
    let broker = SimBroker::new(seed, faults);
    let rows: Vec<Arc<Mutex<Row>>> = (0..3).map(|_| Arc::default()).collect();
    let mut incarnation = 1;
    let mut rx = Some(start_receiver(&broker, &rows, bug, incarnation));
    let mut down_for = 0u32;
    let mut senders = [
        broker.transport("s1", Duration::ZERO),
        broker.transport("s2", Duration::ZERO),
    ];
    let mut seen = Seen::default();
    // Per message id: its account, amount, poison flag, and final verdict.
    let mut sent: BTreeMap<u64, (usize, Pay, Option<DurableVerdict>)> = BTreeMap::new();
    let mut retry: Vec<u64> = Vec::new();
    let mut next_id = 1u64;
    let mut paused_for = 0u32;
    let step = Duration::from_millis(5);
    let traffic = 300u32;
    for tick in 0..traffic + 600 {
        let calm = tick >= traffic;
        if calm {
            broker.set_faults(Faults::none());
        }
        // Senders: new messages while traffic lasts, retries always.
        let mut send = |id: u64,
                        sent: &mut BTreeMap<u64, (usize, Pay, Option<DurableVerdict>)>,
                        retry: &mut Vec<u64>,
                        rng: &mut Rng,
                        seen: &mut Seen| {
            let Some((acct, pay, verdict)) = sent.get_mut(&id) else {
                return;
            };
            let s = &mut senders[rng.below(2) as usize];
            let v =
                send_durable(s, &spec(*acct), &format!("pay-{id}"), pay).map_err(|e| e.to_string());
            match v {
                Ok(DurableVerdict::Unknown) => {
                    seen.unknown += 1;
                    retry.push(id);
                }
                Ok(DurableVerdict::Unsent) => {
                    seen.unsent += 1;
                    retry.push(id);
                }
                Ok(v) => {
                    match &v {
                        DurableVerdict::Stored { .. } => seen.stored += 1,
                        DurableVerdict::Duplicate { .. } => seen.duplicate += 1,
                        DurableVerdict::Dropped => seen.dropped += 1,
                        DurableVerdict::Rejected => seen.rejected += 1,
                        _ => {}
                    }
                    *verdict = Some(v);
                }
                Err(e) => {
                    *verdict = Some(DurableVerdict::Refused(e));
                }
            }
        };
        let again = std::mem::take(&mut retry);
        for id in again {
            send(id, &mut sent, &mut retry, &mut rng, &mut seen);
        }
        if !calm && rng.chance(400) {
            let id = next_id;
            next_id += 1;
            let acct = rng.below(3) as usize;
            let pay = Pay {
                id,
                amount: 1 + rng.below(100),
                poison: rng.chance(30),
            };
            sent.insert(id, (acct, pay, None));
            send(id, &mut sent, &mut retry, &mut rng, &mut seen);
        }
        // A duplicate publish of an old id, as a client that never learned
        // its verdict would make.
        if !calm && next_id > 1 && rng.chance(faults.duplicate / 4) {
            let id = 1 + rng.below(next_id - 1);
            if sent.get(&id).is_some_and(|(_, _, v)| v.is_some()) {
                let (acct, pay, first) = sent[&id].clone();
                let s = &mut senders[0];
                let v = send_durable(s, &spec(acct), &format!("pay-{id}"), &pay)
                    .map_err(|e| e.to_string())?;
                let consistent = match (&first, &v) {
                    (_, DurableVerdict::Unknown | DurableVerdict::Unsent) => true,
                    (
                        Some(DurableVerdict::Stored { seq } | DurableVerdict::Duplicate { seq }),
                        DurableVerdict::Duplicate { seq: s2 },
                    ) => seq == s2,
                    // A refused id was never stored: it may be refused or
                    // stored now (room freed), never a duplicate.
                    (Some(DurableVerdict::Dropped | DurableVerdict::Rejected), v) => {
                        !matches!(v, DurableVerdict::Duplicate { .. })
                    }
                    _ => false,
                };
                if !consistent {
                    return Err(format!("id {id}: first {first:?}, sent again {v:?}"));
                }
                let refused = matches!(
                    first,
                    Some(DurableVerdict::Dropped | DurableVerdict::Rejected)
                );
                match v {
                    // Stored on the second try: that is its fate now.
                    DurableVerdict::Stored { .. } => {
                        if let Some(e) = sent.get_mut(&id) {
                            e.2 = Some(v);
                        }
                    }
                    // Maybe stored now: found out by sending again.
                    DurableVerdict::Unknown | DurableVerdict::Unsent if refused => {
                        if let Some(e) = sent.get_mut(&id) {
                            e.2 = None;
                        }
                        retry.push(id);
                    }
                    _ => {}
                }
            }
        }
        // The receiving node.
        match rx.as_mut() {
            Some(r) => {
                if paused_for > 0 {
                    paused_for -= 1;
                    if paused_for == 0 {
                        broker.set_state(&r.t, ClientState::Up);
                    }
                } else {
                    for b in &mut r.boxes {
                        b.pump(&mut r.t);
                    }
                    r.sys.run_until_idle().map_err(|e| format!("{e:?}"))?;
                    let pending_acks = r
                        .boxes
                        .iter()
                        .any(|b| b.shared.lock().map(|s| !s.acks.is_empty()).unwrap_or(false));
                    if !calm && rng.chance(crash_chance) {
                        if pending_acks {
                            seen.crashes_between_apply_and_ack += 1;
                        }
                        broker.set_state(&r.t, ClientState::Crashed);
                        rx = None;
                        down_for = 1 + rng.below(20) as u32;
                    } else if !calm && lean == 3 && rng.chance(10) {
                        broker.set_state(&r.t, ClientState::Paused);
                        paused_for = 1 + rng.below(30) as u32;
                    } else if !calm && lean == 3 && rng.chance(5) {
                        broker.set_state(&r.t, ClientState::Partitioned);
                        paused_for = 1 + rng.below(10) as u32;
                    }
                }
            }
            None => {
                down_for = down_for.saturating_sub(1);
                if down_for == 0 {
                    incarnation += 1;
                    rx = Some(start_receiver(&broker, &rows, bug, incarnation));
                }
            }
        }
        if calm && paused_for > 0 {
            paused_for = 0;
            if let Some(r) = &rx {
                broker.set_state(&r.t, ClientState::Up);
            }
        }
        if let Some(r) = &rx {
            for b in &r.boxes {
                let s = b.stats();
                seen.redelivered = seen.redelivered.max(s.redelivered);
            }
        }
        broker.advance(step);
    }
    let Some(r) = rx else {
        return Err("the receiver is down at the end".into());
    };
    for b in &r.boxes {
        let s = b.stats();
        seen.skipped += s.skipped;
        seen.dead_lettered += s.dead_lettered;
    }
    check(&broker, &rows, &sent, &mut seen)?;
    Ok(seen)
}

fn check(
    broker: &SimBroker,
    rows: &[Arc<Mutex<Row>>],
    sent: &BTreeMap<u64, (usize, Pay, Option<DurableVerdict>)>,
    seen: &mut Seen,
) -> Result<(), String> {
    let mut applied: BTreeMap<u64, u32> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        let row = row.lock().map_err(|_| "poisoned")?;
        let mut last = 0;
        let mut sum = 0;
        for &(seq, id) in &row.log {
            if seq <= last {
                return Err(format!("account {i} applied seq {seq} after {last}"));
            }
            last = seq;
            *applied.entry(id).or_default() += 1;
            sum += sent.get(&id).map_or(0, |(_, p, _)| p.amount);
        }
        if sum != row.balance {
            return Err(format!(
                "account {i}: balance {} but applied {sum}",
                row.balance
            ));
        }
    }
    let mut dead: BTreeMap<u64, u32> = BTreeMap::new();
    let mut evicted: BTreeSet<(usize, u64)> = BTreeSet::new();
    for i in 0..rows.len() {
        let s = spec(i);
        let name = s.stream_name().map_err(|e| e.to_string())?;
        let left = broker.stream_messages(&name);
        if !left.is_empty() {
            return Err(format!(
                "account {i}: {} messages never settled",
                left.len()
            ));
        }
        for seq in broker.stream_evicted(&name) {
            evicted.insert((i, seq));
        }
        seen.evicted += broker.stream_evicted(&name).len() as u64;
        let dl = s.dead_letter_stream().map_err(|e| e.to_string())?;
        for (_, bytes) in broker.stream_messages(&dl) {
            let p: Pay = decode(&bytes).map_err(|e| e.to_string())?;
            *dead.entry(p.id).or_default() += 1;
        }
    }
    for (id, (acct, pay, verdict)) in sent {
        let a = applied.get(id).copied().unwrap_or(0);
        let d = dead.get(id).copied().unwrap_or(0);
        match verdict {
            Some(DurableVerdict::Stored { seq } | DurableVerdict::Duplicate { seq }) => {
                let ev = evicted.contains(&(*acct, *seq));
                if a > 1 || d > 1 || (a == 1 && d == 1) {
                    return Err(format!(
                        "id {id}: applied {a} times, dead-lettered {d} times"
                    ));
                }
                if a == 0 && d == 0 && !ev {
                    return Err(format!("id {id} (seq {seq}) stored, then neither applied, dead-lettered nor evicted"));
                }
                if pay.poison && a > 0 {
                    return Err(format!("poison id {id} applied"));
                }
            }
            Some(DurableVerdict::Dropped | DurableVerdict::Rejected) => {
                if a + d > 0 {
                    return Err(format!(
                        "id {id} refused ({verdict:?}) but applied {a}, dead-lettered {d}"
                    ));
                }
            }
            other => return Err(format!("id {id}: no definite verdict ({other:?})")),
        }
    }
    Ok(())
}

fn seeds() -> std::ops::Range<u64> {
    match std::env::var("DURABLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) => s..s + 1,
        None => 0..1000,
    }
}

#[test]
fn a_thousand_seeds_apply_each_durable_message_once_or_dead_letter_it() {
    let mut total = Seen::default();
    let mut failed = Vec::new();
    for seed in seeds() {
        match run_seed(seed, false) {
            Ok(s) => {
                total.stored += s.stored;
                total.duplicate += s.duplicate;
                total.dropped += s.dropped;
                total.rejected += s.rejected;
                total.unknown += s.unknown;
                total.unsent += s.unsent;
                total.redelivered += s.redelivered;
                total.skipped += s.skipped;
                total.dead_lettered += s.dead_lettered;
                total.evicted += s.evicted;
                total.crashes_between_apply_and_ack += s.crashes_between_apply_and_ack;
            }
            Err(e) => failed.push((seed, e)),
        }
    }
    if let Some((seed, e)) = failed.first() {
        panic!(
            "{} seeds failed; replay with DURABLE_SEED={seed} cargo test -p turno-cluster durable::tests\n{e}",
            failed.len()
        );
    }
    if seeds().count() > 1 {
        let t = total;
        for (what, n) in [
            ("stored", t.stored),
            ("duplicate", t.duplicate),
            ("dropped", t.dropped),
            ("rejected", t.rejected),
            ("unknown", t.unknown),
            ("redelivered", t.redelivered),
            ("skipped", t.skipped),
            ("dead-lettered", t.dead_lettered),
            ("evicted", t.evicted),
            (
                "crash between apply and ack",
                t.crashes_between_apply_and_ack,
            ),
        ] {
            assert!(n > 0, "no seed made {what}: {t:?}");
        }
    }
}

#[test]
fn a_seed_replays_the_same_durable_run() {
    let a = format!("{:?}", run_seed(7, false));
    let b = format!("{:?}", run_seed(7, false));
    assert_eq!(a, b);
}

#[test]
fn the_checker_catches_applying_without_the_applied_sequence() {
    let caught = (0..1000).find_map(|seed| run_seed(seed, true).err().map(|e| (seed, e)));
    let Some((seed, e)) = caught else {
        panic!("the injected bug went unnoticed over 1,000 seeds");
    };
    assert!(e.contains("applied"), "caught for another reason: {e}");
    eprintln!("caught by seed {seed}:\n{e}");
}

#[test]
fn a_spec_names_distinct_mailboxes_distinctly() {
    let names: BTreeSet<String> = [
        ("n", "/a/b"),
        ("n-a", "/b"),
        ("n", "/a-b"),
        ("n", "/a_2Db"),
        ("n.a", "/b"),
    ]
    .iter()
    .map(|(n, p)| {
        DurableSpec::new(*n, *p, DurablePolicy::Reject(1))
            .stream_name()
            .unwrap()
    })
    .collect();
    assert_eq!(names.len(), 5);
    for n in &names {
        assert!(!n.contains(['.', '*', '>', ' ']), "{n}");
    }
    assert!(DurableSpec::new("n", "nope", DurablePolicy::Reject(1))
        .subject()
        .is_err());
}
