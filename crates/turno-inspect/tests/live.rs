//! Live mode's exposure rules: loopback by default; any other address only
//! with a token, and with a token the WebSocket only for a page that
//! presents it.
#![cfg(feature = "live")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use turno_inspect::live::{start, LiveOptions};
use turno_inspect::Error;

/// The status line of a WebSocket upgrade request for `path`.
fn upgrade_status(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    head.lines().next().unwrap_or_default().to_owned()
}

fn addr_of(url: &str) -> SocketAddr {
    let rest = url.strip_prefix("http://").unwrap();
    rest[..rest.find('/').unwrap()].parse().unwrap()
}

#[test]
fn live_mode_binds_loopback_by_default_and_needs_no_token_there() {
    let (live, _sink) = start(LiveOptions::default()).unwrap();
    let addr = addr_of(live.url());
    assert!(addr.ip().is_loopback(), "{}", live.url());
    assert_eq!(live.url(), format!("http://{addr}/?live"));
    assert!(upgrade_status(addr, "/api/live").contains(" 101 "));
}

#[test]
fn an_address_that_is_not_loopback_is_refused_without_a_token() {
    let opts = LiveOptions {
        addr: "0.0.0.0:0".parse().unwrap(),
        ..LiveOptions::default()
    };
    match start(opts) {
        Err(e @ Error::TokenRequired(_)) => {
            assert_eq!(
                e.to_string(),
                "live mode on 0.0.0.0:0 (not loopback) needs a token"
            )
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("bound 0.0.0.0 without a token"),
    }
}

#[test]
fn with_a_token_the_websocket_needs_it() {
    let opts = LiveOptions {
        token: Some("s3cret-token".into()),
        ..LiveOptions::default()
    };
    let (live, _sink) = start(opts).unwrap();
    let addr = addr_of(live.url());
    assert_eq!(
        live.url(),
        format!("http://{addr}/?live&token=s3cret-token")
    );
    assert!(upgrade_status(addr, "/api/live").contains(" 401 "));
    assert!(upgrade_status(addr, "/api/live?token=s3cret-tokeN").contains(" 401 "));
    assert!(upgrade_status(addr, "/api/live?token=s3cret").contains(" 401 "));
    assert!(upgrade_status(addr, "/api/live?token=s3cret-token").contains(" 101 "));
}
