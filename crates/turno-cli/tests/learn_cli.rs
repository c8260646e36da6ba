//! `turno learn`: prints its URL on a line of its own and runs snippets in
//! children of the same binary (`turno learn --runner`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn post(addr: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /api/run HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn turno_learn_prints_its_url_and_runs_snippets() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turno"))
        .args(["learn", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _child = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line.trim_end();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with('/'),
        "{url:?}"
    );
    let addr = url.trim_start_matches("http://").trim_end_matches('/');

    let reply = post(
        addr,
        r#"{"code": "process.nextTick(() => console.log('tick'));\nconsole.log('main');", "model": "node"}"#,
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains(r#""stdout":["main","tick"]"#), "{reply}");

    let reply = post(addr, r#"{"code": "let x = ;", "model": "html"}"#);
    assert!(reply.contains(r#""kind":"syntax""#), "{reply}");
    assert!(reply.contains(r#""line":1,"column":9"#), "{reply}");
}

#[test]
fn the_runner_answers_on_stdout() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turno"))
        .args(["learn", "--runner"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"not json").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r#""kind":"bad_request""#), "{text}");
    assert!(text.contains("runner: unreadable request"), "{text}");
}
