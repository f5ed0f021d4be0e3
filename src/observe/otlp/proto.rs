//! The few OTLP trace messages we send, as prost-derived structs.
//!
//! Field numbers and types follow `opentelemetry/proto/collector/trace/v1`
//! and `opentelemetry/proto/trace/v1` (OTLP 1.x). Written out here rather
//! than taken from the `opentelemetry-proto` crate, whose prost types come
//! with tonic (and through it tokio); unused fields are left out, which
//! protobuf allows.

#![allow(missing_docs, unreachable_pub)]

/// `ExportTraceServiceRequest`: the body of `POST /v1/traces`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    /// 1 internal, 3 client.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// Span kinds we use.
pub(crate) const SPAN_KIND_INTERNAL: i32 = 1;
pub(crate) const SPAN_KIND_CLIENT: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    /// 0 unset, 1 ok, 2 error.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

pub(crate) const STATUS_ERROR: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5")]
    pub value: Option<Value>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Value {
    #[prost(string, tag = "1")]
    String(String),
    #[prost(bool, tag = "2")]
    Bool(bool),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
    #[prost(message, tag = "5")]
    Array(ArrayValue),
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

impl KeyValue {
    pub(crate) fn str(key: &str, value: impl Into<String>) -> Self {
        Self::of(key, Value::String(value.into()))
    }

    pub(crate) fn int(key: &str, value: i64) -> Self {
        Self::of(key, Value::Int(value))
    }

    pub(crate) fn strs(key: &str, values: &[String]) -> Self {
        let values = values
            .iter()
            .map(|v| AnyValue {
                value: Some(Value::String(v.clone())),
            })
            .collect();
        Self::of(key, Value::Array(ArrayValue { values }))
    }

    fn of(key: &str, value: Value) -> Self {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }
}
