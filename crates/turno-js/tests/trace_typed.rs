//! Every trace the explorer writes is read by `turno_trace` as typed events
//! of known kinds, each naming its loop, and reconstructs without a problem:
//! the writer and the one reader of the family agree on every program of
//! the corpus (the workers of `html-live` included).

use std::io::Cursor;
use std::path::Path;

use turno_js::{run, Model, RunOptions};
use turno_trace::{Index, Kind, Reader};

#[test]
fn every_corpus_trace_reads_typed() {
    let mut checked = 0;
    for (dir, model) in [
        ("node", Model::Node),
        ("html", Model::Html),
        ("html-live", Model::Html),
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(dir);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "js"))
            .filter(|p| !p.to_string_lossy().ends_with(".worker.js"))
            .collect();
        files.sort();
        for path in files {
            let src = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let opts = RunOptions {
                trace: true,
                base_dir: Some(dir.clone()),
                ..RunOptions::new(model)
            };
            let report = match run(&src, &name, &opts) {
                Ok(r) => r,
                Err(e) => match e.partial_report() {
                    Some(r) => r.clone(),
                    None => panic!("{name}: {e}"),
                },
            };
            let text = report.trace.expect("traced").to_json_lines();
            let reader = Reader::new(text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
            for event in reader {
                let event = event.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(
                    !matches!(event.kind, Kind::Other(_)),
                    "{name}: kind unknown to turno-trace: {}",
                    event.kind_name()
                );
                assert!(
                    event.loop_id.is_some(),
                    "{name}: event {} without loop",
                    event.seq
                );
            }
            let index = Index::build(Cursor::new(&text)).unwrap();
            assert!(index.error().is_none(), "{name}: {:?}", index.error());
            let end = index.world_at(Cursor::new(&text), index.len()).unwrap();
            assert!(end.js.ended.is_some(), "{name}: no run_end");
            turno_js::Trace::from_json_lines(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked} programs");
}
