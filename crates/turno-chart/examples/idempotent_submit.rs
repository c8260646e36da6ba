//! The idempotent submit against the fake gateway (turno-gateway), on virtual time: the
//! gateway takes the money but the reply is lost; the chart does not charge
//! again, it asks by key. Then the session crashes while sending and is
//! restored: it asks again, and still nothing is charged twice.
//!
//! `cargo run -p turno-chart --example idempotent_submit`

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use turno::{DetSystem, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg, Service};
use turno_chart::persist::Persist;
use turno_chart::submit::{self, Submit, CHARGE, LOOKUP};
use turno_chart::Event;
use turno_gateway::{Fault, Faults, GatewayActor, GatewayMsg, Ledger};
use turno_store::Store;

fn main() {
    let n = Arc::new(AtomicU64::new(0));
    let keys: submit::KeySource =
        Arc::new(move || format!("key-{}", n.fetch_add(1, Ordering::Relaxed)));
    let m = Arc::new(
        Submit::new(4200, keys)
            .machine()
            .expect("the submit machine builds"),
    );
    let mut sys = DetSystem::new(1);
    let ledger = Ledger::open(Store::memory()).expect("a memory store opens");
    let (l, f) = (
        ledger.clone(),
        Faults::script(vec![Fault::LostReply, Fault::LostReply]),
    );
    let gw = sys
        .spawn(Props::new(), move || {
            GatewayActor::new(l.clone(), f.clone())
        })
        .expect("gateway");
    let mut services = HashMap::new();
    services.insert(
        CHARGE.to_string(),
        Service::ask(
            gw.clone(),
            Duration::from_secs(1),
            GatewayMsg::charge_from_input,
        ),
    );
    services.insert(
        LOOKUP.to_string(),
        Service::ask(
            gw,
            Duration::from_millis(500),
            GatewayMsg::lookup_from_input,
        ),
    );
    let services = Arc::new(services);
    let last = Arc::new(Mutex::new(String::new()));
    let spawn = |sys: &mut DetSystem, restore: Option<String>| {
        let (m, services, last) = (m.clone(), services.clone(), last.clone());
        let mut restore = restore;
        sys.spawn(Props::new(), move || {
            let (m2, last2) = (m.clone(), last.clone());
            let a = ChartActor::new(m.clone())
                .with_services(services.clone())
                .on_persist(move |s| {
                    println!("{:>6} ms  {}", s.now_ms, s.value(&m2).to_json());
                    *last2.lock().unwrap() = Persist::new(&*m2).to_string(s).expect("persists");
                });
            match restore.take() {
                Some(t) => {
                    let m3 = m.clone();
                    a.restoring(move |now| {
                        Persist::new(&*m3)
                            .sanitizer(submit::sanitizer("submit"))
                            .restore(&t, now)
                    })
                }
                None => a,
            }
        })
        .expect("chart")
    };
    let chart = spawn(&mut sys, None);
    sys.run_until_idle().expect("runs");
    println!("-- CONFIRM (the gateway charges, the reply is lost)");
    let _ = chart.try_send(ChartMsg::Event(Event::new("CONFIRM")));
    sys.run_until_idle().expect("runs");
    println!("-- the session crashes while sending; restored 5 s later");
    let text = last.lock().unwrap().clone();
    sys.stop(chart.id());
    sys.run_until_idle().expect("runs");
    sys.advance(Duration::from_secs(5)).expect("runs");
    let _restored = spawn(&mut sys, Some(text));
    while sys.run_until_idle().is_ok() {
        match sys.next_deadline() {
            Some(d) => {
                let _ = sys.advance_to(d);
            }
            None => break,
        }
    }
    let charges = ledger.charges().expect("the ledger reads");
    println!("-- charges taken: {}", charges.len());
    for receipt in charges {
        println!("   {receipt}");
    }
}
