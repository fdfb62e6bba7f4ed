//! The OpenAPI 3 document of the API, served at `/api/v1/openapi.json`.

use serde_json::{Value, json};

fn get(summary: &str, params: &[(&str, &str, bool)]) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|(name, place, required)| {
            json!({"name": name, "in": place, "required": required, "schema": {"type": "string"}})
        })
        .collect();
    json!({"get": {"summary": summary, "parameters": parameters,
        "responses": {"200": {"description": "OK"}, "400": {"description": "a bad field, named in `field`"},
                      "404": {"description": "no such run"}}}})
}

/// The document.
pub fn document() -> Value {
    let q = "query";
    let mut paths = serde_json::Map::new();
    let entries = [
        ("/api/v1/health", get("Liveness, version and store", &[])),
        (
            "/api/v1/benchmarks",
            get("The registry's benchmarks (specs)", &[("suite", q, false)]),
        ),
        (
            "/api/v1/runs",
            get(
                "Stored runs, newest first, as `warpt results list`",
                &[
                    ("suite", q, false),
                    ("benchmark", q, false),
                    ("machine", q, false),
                    ("since", q, false),
                    ("until", q, false),
                    ("limit", q, false),
                    ("offset", q, false),
                ],
            ),
        ),
        (
            "/api/v1/runs/{id}",
            get(
                "One run, whole (id or unique prefix)",
                &[("id", "path", true)],
            ),
        ),
        (
            "/api/v1/runs/{id}/results",
            get("A run's benchmark results", &[("id", "path", true)]),
        ),
        ("/api/v1/machines", get("Machines with recorded runs", &[])),
        (
            "/api/v1/overview",
            get(
                "One line per machine: its latest run, headline figures with their recent history, regressions",
                &[],
            ),
        ),
        (
            "/api/v1/compare",
            get(
                "Verdicts of `benchmark compare` between two stored runs",
                &[
                    ("base", q, true),
                    ("current", q, true),
                    ("threshold", q, false),
                ],
            ),
        ),
        (
            "/api/v1/series",
            get(
                "One metric's history (passed runs, oldest first)",
                &[
                    ("benchmark", q, true),
                    ("metric", q, true),
                    ("tags", q, false),
                    ("machine", q, false),
                    ("suite", q, false),
                ],
            ),
        ),
        (
            "/api/v1/report/{id}",
            get("The HTML report of a run", &[("id", "path", true)]),
        ),
        (
            "/api/v1/matrix",
            get(
                "Machines x workloads: medians normalised to the best machine, best per workload and per watt",
                &[("suite", q, false)],
            ),
        ),
        (
            "/api/v1/queue",
            get(
                "Queued and running submitted runs with their positions (0 = running)",
                &[],
            ),
        ),
        (
            "/api/v1/jobs",
            get("The latest 200 submitted runs, any state", &[]),
        ),
        (
            "/api/v1/runs/{id}/status",
            get(
                "Where a submitted run stands: state, position, times, message",
                &[("id", "path", true)],
            ),
        ),
        (
            "/api/v1/runs/{id}/events",
            get(
                "WebSocket: the run's events (type: queued, run_started, benchmark_started, stage, progress, \
                 series_started, sample, series_finished, result, telemetry, run_finished), replayed from the \
                 start for late joiners; closed with code 1000 when the run ends",
                &[("id", "path", true)],
            ),
        ),
    ];
    for (path, item) in entries {
        paths.insert(path.to_string(), item);
    }
    paths.insert(
        "/api/v1/query".into(),
        json!({"post": {"summary": "Read-only SQL on the store (row and time capped)",
            "security": [{"bearer": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["sql"], "properties": {"sql": {"type": "string"}}}}}},
            "responses": {"200": {"description": "columns, rows, truncated"},
                "400": {"description": "bad SQL or body"}, "401": {"description": "missing or wrong token"},
                "403": {"description": "the statement writes"}, "408": {"description": "past the time cap"}}}}),
    );
    let auth_errors = json!({"401": {"description": "missing or wrong token"},
        "404": {"description": "no such submitted run"}});
    paths["/api/v1/runs"]["post"] = json!({"summary": "Queue a run (a plan as `benchmark run` takes it); 202 with its id and position",
        "security": [{"bearer": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
            "additionalProperties": false, "properties": {
                "suite": {"type": "string"}, "benchmarks": {"type": "array", "items": {"type": "string"}},
                "components": {"type": "array", "items": {"type": "string"}},
                "params": {"type": "object", "additionalProperties": {}},
                "duration": {"type": "number"}, "burnin_seconds": {"type": "number"},
                "seed": {"type": "integer"}, "precision": {"type": "number"}, "repeat": {"type": "integer"},
                "timeout_multiplier": {"type": "number"}, "suite_timeout": {"type": "number", "minimum": 0}, "monitor": {"type": "boolean"},
                "monitor_interval": {"type": "number"}, "in_process": {"type": "boolean"}}}}}},
        "responses": {"202": {"description": "queued: id, position, links"},
            "400": {"description": "a bad key (named in `field`) or a plan `benchmark run` refuses"},
            "401": {"description": "missing or wrong token"}}});
    paths["/api/v1/runs/{id}"]["delete"] = json!({"summary": "Cancel a submitted run: dropped if queued, stopped as on Ctrl-C if running",
        "security": [{"bearer": []}], "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "was queued, now cancelled"}, "202": {"description": "running; stopping"},
            "409": {"description": "already ended"}, "401": auth_errors["401"], "404": auth_errors["404"]}});
    json!({
        "openapi": "3.0.3",
        "info": {"title": "warpt", "version": env!("CARGO_PKG_VERSION"),
                 "description": "The result history of warpt, served by `warpt serve`."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    })
}
