//! The timeline trace and the stats table: a traced runtime writes Chrome
//! trace-event JSON with one process per actor, one thread per lane, one
//! complete event per op and a flow per transfer.

use std::collections::HashMap;
use std::path::PathBuf;
use weft::ops::ElementwiseOps;

use serde_json::Value;
use weft::{Runtime, Tensor};
use weft_tests::wait_ok;

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("weft-{name}-{}.json", std::process::id()))
}

#[test]
fn a_traced_runtime_writes_valid_trace_events() {
    let path = temp_path("trace");
    let rt = Runtime::builder()
        .split(2)
        .trace(&path)
        .build()
        .expect("runtime");
    assert!(rt.trace().is_some());
    let (l0, l0b, l1) = (
        rt.lane(0).unwrap(),
        rt.lane(0).unwrap(),
        rt.lane(1).unwrap(),
    );
    let x = l0
        .upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).unwrap())
        .unwrap();
    let y = l0b.add(&x, &x).unwrap();
    let moved = l0.transfer(&y, 1).unwrap();
    let z = l1.mul(&moved, &moved).unwrap();
    let failed = l1.run(|_| -> () { panic!("traced failure") }).unwrap();
    assert!(failed.wait().is_err());
    assert_eq!(
        wait_ok(l1.download(&z).unwrap()).as_slice::<f64>().unwrap(),
        [4.0, 16.0, 36.0]
    );
    rt.shutdown().expect("shut down");

    let text = std::fs::read_to_string(&path).expect("the trace was written");
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("a traceEvents array");
    let processes: HashMap<u64, String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| {
            let pid = e["pid"].as_u64().expect("pid");
            (pid, e["args"]["name"].as_str().expect("name").to_owned())
        })
        .collect();
    let pid_of = |name: &str| {
        *processes
            .iter()
            .find(|(_, n)| n.as_str() == name)
            .unwrap_or_else(|| panic!("no process {name} in {processes:?}"))
            .0
    };
    let (p0, p1) = (pid_of("weft-cpu-0"), pid_of("weft-cpu-1"));
    let lanes_of = |pid: u64| {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid)
            .count()
    };
    assert_eq!(lanes_of(p0), 2, "two lanes into domain 0 carried ops");
    assert!(lanes_of(p1) >= 1);

    let ops: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    for op in &ops {
        assert!(op["ts"].as_f64().expect("ts") >= 0.0);
        assert!(op["dur"].as_f64().expect("dur") >= 0.0);
        assert!(op["args"]["queued_us"].as_f64().expect("queue time") >= 0.0);
    }
    let find = |pid: u64, name: &str| {
        ops.iter()
            .find(|e| e["pid"] == pid && e["name"] == name)
            .unwrap_or_else(|| panic!("no op {name} on process {pid}"))
    };
    find(p0, "upload");
    find(p0, "add");
    find(p0, "transfer out");
    find(p1, "transfer in");
    find(p1, "mul");
    find(p1, "download");
    assert_eq!(find(p1, "op")["args"]["outcome"], "panicked");
    assert_eq!(find(p1, "mul")["args"]["outcome"], "completed");

    // The transfer is one flow from domain 0 to domain 1.
    let flow = |ph: &str| -> &Value {
        let found: Vec<&Value> = events.iter().filter(|e| e["ph"] == ph).collect();
        assert_eq!(found.len(), 1, "{ph}: {found:?}");
        found[0]
    };
    let (start, end) = (flow("s"), flow("f"));
    assert_eq!(start["id"], end["id"]);
    assert_eq!(
        (start["pid"].as_u64(), end["pid"].as_u64()),
        (Some(p0), Some(p1))
    );
    assert!(end["ts"].as_f64() >= start["ts"].as_f64());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_trace_file_is_written_once() {
    let path = temp_path("written-once");
    let traced = || {
        Runtime::builder()
            .split(1)
            .trace(&path)
            .build()
            .expect("runtime")
    };
    // Shut down: written then, and the drop leaves it alone (the file
    // taken away stays away).
    let rt = traced();
    wait_ok(rt.lane(0).unwrap().run(|_| 1).unwrap());
    rt.shutdown().expect("shut down");
    std::fs::remove_file(&path).expect("the shutdown wrote the trace");
    drop(rt);
    assert!(!path.exists(), "the drop wrote the trace a second time");
    // Dropped without a shutdown: written by the drop.
    let rt = traced();
    wait_ok(rt.lane(0).unwrap().run(|_| 1).unwrap());
    drop(rt);
    std::fs::remove_file(&path).expect("the drop wrote the trace");
}

#[test]
fn the_ring_buffer_bounds_the_trace() {
    let path = temp_path("ring");
    let rt = Runtime::builder()
        .split(1)
        .trace(&path)
        .trace_capacity(100)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).unwrap();
    for i in 0..1000u32 {
        drop(lane.run(move |_| i).unwrap());
    }
    wait_ok(lane.run(|_| ()).unwrap());
    let timelines = rt.trace().expect("traced").snapshot();
    assert_eq!(timelines[0].records.len(), 100);
    // The last op is recorded just after its ticket resolves.
    assert!(
        (900..=901).contains(&timelines[0].dropped),
        "{}",
        timelines[0].dropped
    );
    drop(rt);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("written at drop")).unwrap();
    let ops = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert_eq!(ops, 100);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn an_untraced_runtime_has_no_trace_and_prints_a_stats_table() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    assert!(rt.trace().is_none() || std::env::var_os(weft::runtime::TRACE_ENV).is_some());
    let lane = rt.lane(0).unwrap();
    for i in 0..64u32 {
        drop(lane.run(move |_| i).unwrap());
    }
    wait_ok(lane.run(|_| ()).unwrap());
    let stats = rt.stats();
    let ops = &stats.actors[0].ops;
    assert_eq!((ops.submitted, ops.completed, ops.queued), (65, 65, 0));
    assert!(ops.run_time.samples >= 4, "{ops:?}");
    assert!(ops.run_time.quantile(0.5) <= ops.run_time.max);
    let table = stats.to_string();
    assert!(table.starts_with("actor / lane"), "{table}");
    assert!(table.contains("weft-cpu-0"), "{table}");
    assert!(table.contains(&format!("lane {}", lane.id())), "{table}");
}

#[test]
fn actor_counts_include_ops_queued_on_closed_lanes() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let keep = rt.lane(0).unwrap();
    let hold = weft_tests::Hold::on(&keep);
    let dropped = rt.lane(0).unwrap();
    for i in 0..7u32 {
        drop(keep.run(move |_| i).unwrap());
        drop(dropped.run(move |_| i).unwrap());
    }
    drop(dropped);
    // The holding op runs; 14 wait behind it, 7 of them on a closed lane.
    let ops = rt.stats().actors[0].ops;
    assert_eq!((ops.submitted, ops.queued), (15, 15), "{ops:?}");
    wait_ok(hold.release());
    wait_ok(keep.run(|_| ()).unwrap());
    // The closed lane's ops have no ticket to wait on, and lanes are not
    // ordered against each other: its last op may finish after `keep`'s.
    weft_tests::eventually("the closed lane's ops complete", || {
        rt.stats().actors[0].ops.queued == 0
    });
    let ops = rt.stats().actors[0].ops;
    assert_eq!(
        (ops.submitted, ops.completed, ops.queued),
        (16, 16, 0),
        "{ops:?}"
    );
}

/// What a timeline picture shows, read back from its XML: per (actor,
/// lane) row the outcome classes of its bars, and the flows' ids.
#[derive(Debug, PartialEq)]
struct Drawn {
    rows: Vec<(String, u64, Vec<String>)>,
    queues: usize,
    flows: Vec<u64>,
}

fn drawn(svg: &str) -> Drawn {
    let doc = roxmltree::Document::parse(svg).expect("the picture is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let class = |n: &roxmltree::Node, c: &str| {
        n.attribute("class")
            .is_some_and(|a| a.split(' ').any(|w| w == c))
    };
    let mut rows = Vec::new();
    for actor in root.descendants().filter(|n| class(n, "actor")) {
        let name = actor
            .attribute("data-name")
            .expect("an actor's name")
            .to_owned();
        for lane in actor.children().filter(|n| class(n, "lane")) {
            let id: u64 = lane
                .attribute("data-lane")
                .expect("a lane id")
                .parse()
                .unwrap();
            let bars = lane
                .children()
                .filter(|n| class(n, "op"))
                .map(|n| {
                    let classes: Vec<&str> = n.attribute("class").unwrap().split(' ').collect();
                    assert!(
                        n.children().any(|t| t.has_tag_name("title")),
                        "a bar without a tooltip"
                    );
                    assert!(n.attribute("width").unwrap().parse::<f64>().unwrap() >= 1.0);
                    classes[1].to_owned()
                })
                .collect();
            rows.push((name.clone(), id, bars));
        }
    }
    let flows = root
        .descendants()
        .filter(|n| class(n, "flow") && n.attribute("data-flow").is_some())
        .map(|n| n.attribute("data-flow").unwrap().parse().unwrap())
        .collect();
    let queues = root
        .descendants()
        .filter(|n| class(n, "queue") && !n.ancestors().any(|a| class(&a, "legend")))
        .count();
    Drawn {
        rows,
        queues,
        flows,
    }
}

/// What the trace's JSON says the picture must show.
fn expected(json: &str) -> Drawn {
    let json: Value = serde_json::from_str(json).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let name_of = |pid: &Value| {
        events
            .iter()
            .find(|e| e["name"] == "process_name" && &e["pid"] == pid)
            .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let mut rows: Vec<(u64, String, u64, Vec<String>)> = Vec::new();
    let mut queues = 0;
    for op in events.iter().filter(|e| e["ph"] == "X") {
        let (pid, lane) = (op["pid"].as_u64().unwrap(), op["tid"].as_u64().unwrap());
        let outcome = op["args"]["outcome"].as_str().unwrap().replace(' ', "-");
        if op["args"]["queued_us"].as_f64().unwrap() > 0.0 {
            queues += 1;
        }
        match rows.iter_mut().find(|r| r.0 == pid && r.2 == lane) {
            Some(row) => row.3.push(outcome),
            None => rows.push((pid, name_of(&op["pid"]), lane, vec![outcome])),
        }
    }
    rows.sort_by_key(|r| (r.0, r.2));
    let starts: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "s")
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    let flows = events
        .iter()
        .filter(|e| e["ph"] == "f")
        .map(|e| e["id"].as_u64().unwrap())
        .filter(|id| starts.contains(id))
        .collect();
    Drawn {
        rows: rows.into_iter().map(|(_, n, l, b)| (n, l, b)).collect(),
        queues,
        flows,
    }
}

/// A traced run over two domains: ops on three lanes, a transfer, a
/// panicking op, an op whose dependency failed.
fn traced_run(path: &std::path::Path) {
    let rt = Runtime::builder()
        .split(2)
        .trace(path)
        .build()
        .expect("runtime");
    let (l0, l0b, l1) = (
        rt.lane(0).unwrap(),
        rt.lane(0).unwrap(),
        rt.lane(1).unwrap(),
    );
    let x = l0
        .upload(Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap())
        .unwrap();
    let y = l0b.add(&x, &x).unwrap();
    let moved = l0.transfer(&y, 1).unwrap();
    let z = l1.mul(&moved, &moved).unwrap();
    let failed = l1.run(|_| -> () { panic!("traced failure") }).unwrap();
    let after = l1
        .submit(weft::Op::new(|_: &mut weft::CpuEngine| ()).after([failed.event()]))
        .unwrap();
    assert!(after.wait().is_err());
    wait_ok(l1.download(&z).unwrap());
    rt.shutdown().expect("shut down");
}

#[test]
fn the_timeline_picture_draws_every_row_bar_and_arrow_of_its_trace() {
    let json_path = temp_path("picture");
    traced_run(&json_path);
    let json = std::fs::read_to_string(&json_path).expect("the trace was written");
    let view =
        weft::trace::TraceView::from_chrome_json(&json).expect("weft's own trace reads back");
    let want = expected(&json);
    assert_eq!(want.flows.len(), 1, "one transfer: {want:?}");
    assert!(want
        .rows
        .iter()
        .any(|r| r.2.contains(&"panicked".to_owned())));
    assert!(want
        .rows
        .iter()
        .any(|r| r.2.contains(&"dependency-failed".to_owned())));
    assert_eq!(drawn(&view.to_svg()), want);

    // The HTML page holds the same picture, and nothing from elsewhere.
    let html = view.to_html();
    let (from, to) = (html.find("<svg").unwrap(), html.rfind("</svg>").unwrap());
    assert_eq!(drawn(&html[from..to + "</svg>".len()]), want);
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "the page links only the SVG namespace"
    );
    assert!(!html.contains("<script"));
    let _ = std::fs::remove_file(&json_path);
}

#[test]
fn a_trace_path_ending_in_svg_gets_the_picture() {
    let path = std::env::temp_dir().join(format!("weft-picture-{}.svg", std::process::id()));
    traced_run(&path);
    let svg = std::fs::read_to_string(&path).expect("the picture was written");
    let got = drawn(&svg);
    assert_eq!(got.flows.len(), 1, "{got:?}");
    let bars: usize = got.rows.iter().map(|r| r.2.len()).sum();
    // upload, add, transfer out, transfer in, mul, the panic, the op after
    // it, download (and no more: the shutdown runs nothing traced).
    assert_eq!(bars, 8, "{got:?}");
    let _ = std::fs::remove_file(&path);
}
