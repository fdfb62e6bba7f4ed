//! Benchmark parameters: typed scalar values keyed by name.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of a benchmark, by name. Sorted so exports are stable.
pub type Params = BTreeMap<String, ParamValue>;

/// One parameter value. In JSON it is a bare boolean, integer, float or string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ParamValue {
    /// A flag.
    Bool(bool),
    /// A whole number (sizes, counts, thread numbers).
    Int(i64),
    /// A real number.
    Float(f64),
    /// Free text (paths, host names, choices).
    Str(String),
}

/// Deserialises a missing or `null` collection as empty: the seed's shape
/// had `params` and `tags` as optional maps.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A textual parameter value that does not fit the parameter's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter '{key}': '{value}' is not {expected}")]
pub struct ParamError {
    /// The parameter's name.
    pub key: String,
    /// The text that was given.
    pub value: String,
    /// What the parameter's type accepts, e.g. "an integer".
    pub expected: &'static str,
}

impl ParamValue {
    /// A JSON value as a parameter value: strings, whole numbers, numbers
    /// and booleans as they are, anything else as its JSON text (another
    /// tool's parameters, an adapter's details).
    pub fn from_json(v: &serde_json::Value) -> Self {
        use serde_json::Value;
        match v {
            Value::String(s) => ParamValue::Str(s.clone()),
            Value::Bool(b) => ParamValue::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => ParamValue::Int(i),
                (None, Some(f)) => ParamValue::Float(f),
                (None, None) => ParamValue::Str(n.to_string()),
            },
            other => ParamValue::Str(other.to_string()),
        }
    }

    /// Which kind of value this is, as a user would read it.
    pub fn type_name(&self) -> &'static str {
        match self {
            ParamValue::Bool(_) => "a boolean (true/false)",
            ParamValue::Int(_) => "an integer",
            ParamValue::Float(_) => "a number",
            ParamValue::Str(_) => "a string",
        }
    }

    /// Parses `text` as a value of the same type as `self` (the default),
    /// so `--param array_mb=64` becomes an integer because the default is one.
    pub fn parse_like(&self, key: &str, text: &str) -> Result<ParamValue, ParamError> {
        let err = || ParamError {
            key: key.to_string(),
            value: text.to_string(),
            expected: self.type_name(),
        };
        let t = text.trim();
        Ok(match self {
            ParamValue::Bool(_) => match t.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => ParamValue::Bool(true),
                "false" | "0" | "no" | "off" => ParamValue::Bool(false),
                _ => return Err(err()),
            },
            ParamValue::Int(_) => ParamValue::Int(t.parse().map_err(|_| err())?),
            ParamValue::Float(_) => {
                let v: f64 = t.parse().map_err(|_| err())?;
                if !v.is_finite() {
                    return Err(err());
                }
                ParamValue::Float(v)
            }
            ParamValue::Str(_) => ParamValue::Str(text.to_string()),
        })
    }

    /// The value as an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ParamValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a float; integers convert.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ParamValue::Int(v) => Some(*v as f64),
            ParamValue::Float(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ParamValue::Bool(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as text, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ParamValue::Str(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Str(v) => f.write_str(v),
        }
    }
}

impl From<bool> for ParamValue {
    fn from(v: bool) -> Self {
        ParamValue::Bool(v)
    }
}

impl From<i64> for ParamValue {
    fn from(v: i64) -> Self {
        ParamValue::Int(v)
    }
}

impl From<f64> for ParamValue {
    fn from(v: f64) -> Self {
        ParamValue::Float(v)
    }
}

impl From<&str> for ParamValue {
    fn from(v: &str) -> Self {
        ParamValue::Str(v.to_string())
    }
}

impl From<String> for ParamValue {
    fn from(v: String) -> Self {
        ParamValue::Str(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_as_the_default_type() {
        let int = ParamValue::Int(0);
        assert_eq!(int.parse_like("n", " 64 "), Ok(ParamValue::Int(64)));
        assert!(int.parse_like("n", "6.5").is_err());
        let b = ParamValue::Bool(false);
        assert_eq!(b.parse_like("x", "yes"), Ok(ParamValue::Bool(true)));
        let e = b.parse_like("x", "maybe").unwrap_err();
        assert_eq!(
            e.to_string(),
            "parameter 'x': 'maybe' is not a boolean (true/false)"
        );
        assert!(ParamValue::Float(1.0).parse_like("f", "inf").is_err());
        assert_eq!(
            ParamValue::Str(String::new()).parse_like("p", "/tmp"),
            Ok("/tmp".into())
        );
    }
}
