//! `turno demo overload` prints its table and writes the same comparison
//! as a picture, its path on the last line.

use std::process::Command;

#[test]
fn the_table_and_the_picture_beside_it() {
    let dir = std::env::temp_dir().join(format!("turno-overload-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("cmp.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_turno"))
        .args([
            "demo",
            "overload",
            "--seconds",
            "5",
            "--capacity",
            "20",
            "--svg",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("keep-newest(20)") && text.contains("max depth"));
    assert_eq!(
        text.lines().last().unwrap(),
        format!("the same as a picture: {}", svg.display())
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    // Depth and delay, a line per policy in each.
    assert_eq!(picture.matches("<path d=\"M").count(), 10);
    // A file that cannot be written is an error naming it.
    let bad = dir.join("no-such-dir").join("x.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_turno"))
        .args(["demo", "overload", "--seconds", "1", "--svg"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains(&bad.display().to_string()));
    std::fs::remove_dir_all(&dir).unwrap();
}
