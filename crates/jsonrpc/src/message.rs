//! One JSON-RPC 1.0 message, as Open vSwitch puts it on the wire
//! (RFC 7047 section 4; `lib/jsonrpc.c`).
//!
//! A message is a JSON object with some of the members `method`, `params`,
//! `result`, `error` and `id`; which ones are present (and non-null) says
//! what it is:
//!
//! | kind    | method | params | result | error    | id       |
//! |---------|--------|--------|--------|----------|----------|
//! | request | string | array  | -      | -        | non-null |
//! | notify  | string | array  | -      | -        | null     |
//! | reply   | -      | -      | any    | null     | non-null |
//! | error   | -      | -      | null   | non-null | non-null |
//!
//! Written the way Open vSwitch writes them: a notification carries
//! `"id": null`, a reply `"error": null`, an error `"result": null`.
//! Read leniently where Open vSwitch is lenient (a null member counts as
//! absent) and strictly where it is strict: `params` must be an array and
//! any other member is an error. One leniency of our own: a reply whose
//! `result` is null is still a reply (Open vSwitch would call it a request
//! without a method); JSON-RPC 1.0 allows it.

use serde_json::{Map, Value};

/// A JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A call that wants an answer with the same `id`.
    Request {
        method: String,
        params: Value,
        id: Value,
    },
    /// A call that wants no answer (`"id": null`).
    Notify { method: String, params: Value },
    /// A successful answer to the request with this `id`.
    Reply { result: Value, id: Value },
    /// A failed answer: `error` is never null.
    Error { error: Value, id: Value },
}

impl Message {
    /// The request's or answer's `id` (`None` for a notification).
    pub fn id(&self) -> Option<&Value> {
        match self {
            Message::Request { id, .. } | Message::Reply { id, .. } | Message::Error { id, .. } => {
                Some(id)
            }
            Message::Notify { .. } => None,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notify { method, .. } => Some(method),
            _ => None,
        }
    }

    /// Reads a message from a JSON value; the error names the member at
    /// fault (in Open vSwitch's words where it has them).
    pub fn from_value(v: Value) -> Result<Message, String> {
        let Value::Object(mut o) = v else {
            return Err("message is not a JSON object".into());
        };
        // A null member counts as absent, as in Open vSwitch.
        let mut take = |name: &str| o.remove(name).filter(|v| !v.is_null());
        let method = take("method");
        let params = take("params");
        let has_result = o.contains_key("result");
        let result = o.remove("result");
        let error = o.remove("error").filter(|v| !v.is_null());
        let id = o.remove("id").filter(|v| !v.is_null());
        if let Some((name, _)) = o.iter().next() {
            return Err(format!("message has unexpected member \"{name}\""));
        }
        let must_not = |kind: &str, name: &str, present: bool| {
            if present {
                Err(format!("{kind} must not have \"{name}\""))
            } else {
                Ok(())
            }
        };
        if let Some(method) = method {
            let Value::String(method) = method else {
                return Err("\"method\" is not a JSON string".into());
            };
            let kind = if id.is_some() { "request" } else { "notify" };
            let params = match params {
                Some(p @ Value::Array(_)) => p,
                Some(_) => return Err("\"params\" must be JSON array".into()),
                None => return Err(format!("{kind} must have \"params\"")),
            };
            must_not(
                kind,
                "result",
                result.as_ref().is_some_and(|r| !r.is_null()),
            )?;
            must_not(kind, "error", error.is_some())?;
            return Ok(match id {
                Some(id) => Message::Request { method, params, id },
                None => Message::Notify { method, params },
            });
        }
        let kind = if error.is_some() { "error" } else { "reply" };
        must_not(kind, "params", params.is_some())?;
        let Some(id) = id else {
            if error.is_none() && !has_result {
                return Err("message has none of \"method\", \"result\" and \"error\"".into());
            }
            return Err(format!("{kind} must have \"id\""));
        };
        match (error, result) {
            (Some(_), Some(r)) if !r.is_null() => Err("error must not have \"result\"".into()),
            (Some(error), _) => Ok(Message::Error { error, id }),
            (None, Some(result)) => Ok(Message::Reply { result, id }),
            (None, None) => Err("message has none of \"method\", \"result\" and \"error\"".into()),
        }
    }

    /// The message as a JSON object, without copying its parameters or
    /// result (a transaction of a million operations is large).
    pub fn into_value(self) -> Value {
        let mut o = Map::new();
        let (a, b, c) = match self {
            Message::Request { method, params, id } => {
                (("method", Value::String(method)), ("params", params), id)
            }
            Message::Notify { method, params } => (
                ("method", Value::String(method)),
                ("params", params),
                Value::Null,
            ),
            Message::Reply { result, id } => (("result", result), ("error", Value::Null), id),
            Message::Error { error, id } => (("result", Value::Null), ("error", error), id),
        };
        o.insert(a.0.into(), a.1);
        o.insert(b.0.into(), b.1);
        o.insert("id".into(), c);
        Value::Object(o)
    }

    /// The message as a JSON object, members as Open vSwitch writes them.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        match self {
            Message::Request { method, params, id } => {
                o.insert("method".into(), Value::String(method.clone()));
                o.insert("params".into(), params.clone());
                o.insert("id".into(), id.clone());
            }
            Message::Notify { method, params } => {
                o.insert("method".into(), Value::String(method.clone()));
                o.insert("params".into(), params.clone());
                o.insert("id".into(), Value::Null);
            }
            Message::Reply { result, id } => {
                o.insert("result".into(), result.clone());
                o.insert("error".into(), Value::Null);
                o.insert("id".into(), id.clone());
            }
            Message::Error { error, id } => {
                o.insert("result".into(), Value::Null);
                o.insert("error".into(), error.clone());
                o.insert("id".into(), id.clone());
            }
        }
        Value::Object(o)
    }

    /// The message serialized, compact, ready to send (no delimiter: the
    /// peer's framer finds where each object ends).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing a `Value` to a Vec cannot fail (string keys, no I/O).
        serde_json::to_vec(&self.to_value()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roundtrip(m: Message) {
        let v = m.to_value();
        assert_eq!(Message::from_value(v.clone()), Ok(m), "{v}");
    }

    #[test]
    fn each_kind_is_written_as_open_vswitch_writes_it_and_read_back() {
        let req = Message::Request {
            method: "echo".into(),
            params: json!([1]),
            id: json!(0),
        };
        assert_eq!(
            req.to_value(),
            json!({"method": "echo", "params": [1], "id": 0})
        );
        roundtrip(req);
        let n = Message::Notify {
            method: "update".into(),
            params: json!([]),
        };
        assert_eq!(
            n.to_value(),
            json!({"method": "update", "params": [], "id": null})
        );
        roundtrip(n);
        let r = Message::Reply {
            result: json!("ok"),
            id: json!("x"),
        };
        assert_eq!(
            r.to_value(),
            json!({"result": "ok", "error": null, "id": "x"})
        );
        roundtrip(r);
        roundtrip(Message::Reply {
            result: Value::Null,
            id: json!(1),
        });
        let e = Message::Error {
            error: json!("bad"),
            id: json!(2),
        };
        assert_eq!(
            e.to_value(),
            json!({"result": null, "error": "bad", "id": 2})
        );
        roundtrip(e);
        let bytes = Message::Notify {
            method: "m".into(),
            params: json!([]),
        }
        .to_bytes();
        assert!(!bytes.contains(&b' ') && !bytes.contains(&b'\n'), "compact");
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            json!({"method": "m", "params": [], "id": null})
        );
    }

    #[test]
    fn a_notify_may_leave_the_id_out() {
        assert_eq!(
            Message::from_value(json!({"method": "m", "params": []})),
            Ok(Message::Notify {
                method: "m".into(),
                params: json!([])
            })
        );
    }

    #[test]
    fn errors_name_the_member_at_fault() {
        let e = |v: Value| Message::from_value(v).unwrap_err();
        assert_eq!(e(json!([1])), "message is not a JSON object");
        assert_eq!(
            e(json!({"method": 1, "params": [], "id": 1})),
            "\"method\" is not a JSON string"
        );
        assert_eq!(
            e(json!({"method": "m", "params": {}, "id": 1})),
            "\"params\" must be JSON array"
        );
        assert_eq!(
            e(json!({"method": "m", "id": 1})),
            "request must have \"params\""
        );
        assert_eq!(
            e(json!({"method": "m", "params": [], "id": 1, "extra": 0})),
            "message has unexpected member \"extra\""
        );
        assert_eq!(
            e(json!({"method": "m", "params": [], "id": 1, "result": 0})),
            "request must not have \"result\""
        );
        assert_eq!(
            e(json!({"result": 1, "error": null})),
            "reply must have \"id\""
        );
        assert_eq!(
            e(json!({"result": 1, "error": "x", "id": 1})),
            "error must not have \"result\""
        );
        assert_eq!(
            e(json!({"id": 1})),
            "message has none of \"method\", \"result\" and \"error\""
        );
        assert_eq!(
            e(json!({"result": 1, "params": [], "id": 1})),
            "reply must not have \"params\""
        );
    }
}
