//! A small MCP client for the MCP conformance suite
//! (`npx @modelcontextprotocol/conformance client --command ...`): it
//! connects to the Streamable HTTP URL it is given (the last argument),
//! initializes, lists the server's tools and calls each one with
//! arguments made from its schema, then ends the session.
//!
//! ```text
//! cargo run --example mcp_conformance_client -- http://127.0.0.1:3001/mcp
//! ```
//!
//! It answers a server's elicitation with the schema's defaults
//! (`"elicitation": "accept_defaults"`). Exit code 0 when every call
//! answered, 1 otherwise.

use std::collections::BTreeMap;
use std::process::ExitCode;

use boardroom::mcp::{Elicitation, McpPool, McpServerConfig};
use serde_json::{Map, Value, json};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: mcp_conformance_client URL");
        return ExitCode::from(2);
    };
    let mut config = McpServerConfig::http(url);
    config.elicitation = Some(Elicitation::AcceptDefaults);
    config.timeout = Some(20.0);
    let mut servers = BTreeMap::new();
    servers.insert("remote".to_string(), config);
    let pool = match McpPool::start(&servers, None) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let (version, name) = pool.server_info("remote").unwrap_or_default();
    println!("connected to '{name}' (protocol {version})");
    let tools = match pool.tools("remote") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let mut failed = false;
    for tool in tools {
        let args = arguments(&tool.input_schema);
        match pool.call("remote", &tool.name, args.clone()) {
            Ok(text) => println!("{}({args}) -> {text}", tool.name),
            Err(e) => {
                failed = true;
                println!("{}({args}) failed: {e}", tool.name);
            }
        }
    }
    pool.shutdown();
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Arguments for a tool: each property's default, or a value of its type.
fn arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (i, (name, prop)) in props.iter().enumerate() {
            let value = prop.get("default").cloned().unwrap_or_else(|| {
                match prop.get("type").and_then(Value::as_str) {
                    Some("number" | "integer") => json!(i + 1),
                    Some("boolean") => json!(true),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!("test"),
                }
            });
            args.insert(name.clone(), value);
        }
    }
    Value::Object(args)
}
