//! A headless Chromium driven over the DevTools protocol: navigate, run
//! script in the page, wait for a condition, take screenshots, and collect
//! every console error, uncaught exception and failed load.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// A running browser with one page attached.
pub(crate) struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next: u64,
    /// Errors seen so far (console `error`, exceptions, failed loads).
    pub(crate) errors: Vec<String>,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The DevTools target list (the endpoint keeps the connection open, so
/// the body is read by its length).
fn json_list(host: &str) -> Value {
    let mut s = TcpStream::connect(host).unwrap();
    write!(s, "GET /json/list HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut len = 0;
    let mut line = String::new();
    while r.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
        line.clear();
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

fn chromium() -> std::path::PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| warpt_system::which(n))
        .expect("a Chromium is needed for this test; scripts/test installs Debian's chromium")
}

impl Browser {
    /// Starts Chromium (profile in `profile`) and attaches to its page.
    pub(crate) fn launch(profile: &Path) -> Browser {
        let mut child = Command::new(chromium())
            .args("--headless --no-sandbox --disable-gpu --no-first-run --remote-debugging-port=0 --window-size=1300,1000".split(' '))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        let mut endpoint = None;
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 {
            if let Some(url) = line.trim().strip_prefix("DevTools listening on ") {
                endpoint = Some(url.to_string());
                break;
            }
            line.clear();
        }
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        let endpoint = endpoint.expect("chromium printed its DevTools address");
        let host = endpoint
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let targets = json_list(&host);
        let page = targets
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .expect("a page target");
        let (ws, _) = tungstenite::connect(page["webSocketDebuggerUrl"].as_str().unwrap()).unwrap();
        let mut b = Browser {
            child,
            ws,
            next: 0,
            errors: Vec::new(),
        };
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            b.call(domain, json!({}));
        }
        b
    }

    fn note(&mut self, event: &Value) {
        let p = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.exceptionThrown") => self.errors.push(format!(
                "exception: {}",
                p["exceptionDetails"]["exception"]["description"]
                    .as_str()
                    .or(p["exceptionDetails"]["text"].as_str())
                    .unwrap_or("?")
            )),
            Some("Runtime.consoleAPICalled") if p["type"] == "error" || p["type"] == "assert" => {
                self.errors.push(format!("console: {}", p["args"]))
            }
            Some("Log.entryAdded") if p["entry"]["level"] == "error" => self.errors.push(format!(
                "log: {} {}",
                p["entry"]["text"],
                p["entry"]["url"].as_str().unwrap_or("")
            )),
            _ => {}
        }
    }

    /// Calls a DevTools method; returns its result.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.ws
            .send(Message::text(
                json!({"id": id, "method": method, "params": params}).to_string(),
            ))
            .unwrap();
        loop {
            let Message::Text(t) = self.ws.read().unwrap() else {
                continue;
            };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["id"] == id {
                assert!(v["error"].is_null(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.note(&v);
        }
    }

    /// How many elements of the page match the CSS `selector`.
    pub(crate) fn count(&mut self, selector: &str) -> u64 {
        let n = self.eval(&format!("document.querySelectorAll('{selector}').length"));
        n.as_u64()
            .unwrap_or_else(|| panic!("count of {selector}: {n}"))
    }

    /// Evaluates `expr` in the page (awaiting a promise); its value.
    pub(crate) fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "{expr}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is truthy (a hang fails after two minutes).
    pub(crate) fn wait(&mut self, expr: &str) {
        let start = Instant::now();
        while self.eval(&format!("!!({expr})")) != json!(true) {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "never true: {expr}; errors: {:?}",
                self.errors
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Opens `url` and waits for the dashboard's view `view` to be drawn.
    pub(crate) fn open(&mut self, url: &str, view: &str) {
        self.eval("delete document.body.dataset.ready");
        self.call("Page.navigate", json!({"url": url}));
        self.wait(&format!(
            "document.body && document.body.dataset.ready === '{view}'"
        ));
    }

    /// A PNG of the page as it stands.
    pub(crate) fn screenshot(&mut self, path: &Path) {
        self.capture(
            path,
            json!({"format": "png", "captureBeyondViewport": true}),
        );
    }

    /// A PNG of `height` CSS pixels of the page, the page's width, from the
    /// top of the first element matching `selector`: a long page's part.
    pub(crate) fn screenshot_at(&mut self, path: &Path, selector: &str, height: f64) {
        let top = self.eval(&format!(
            "document.querySelector('{selector}').getBoundingClientRect().top + window.scrollY"
        ));
        let width = self.eval("document.documentElement.scrollWidth");
        self.capture(
            path,
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": top, "width": width, "height": height, "scale": 1}}),
        );
    }

    fn capture(&mut self, path: &Path, params: Value) {
        let r = self.call("Page.captureScreenshot", params);
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
}
