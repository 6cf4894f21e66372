//! `parse_ident(text)`: PostgreSQL's split of a qualified identifier into its parts
//! (`'public.cpu'` → `{public,cpu}`, `'"My T".x'` → `{My T,x}`; unquoted parts lowercased).
//! Grafana's column lookup asks `array_length(parse_ident('cpu'), 1) = 2`.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, ListBuilder, StringBuilder};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The parts of `s`, or why it is not a qualified identifier.
pub fn parse_ident(s: &str) -> std::result::Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut chars = s.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(format!("string is not a valid identifier: {s:?}")),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
            part = part.trim().to_string();
            let word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
            if !part.chars().all(word) {
                return Err(format!("string is not a valid identifier: {s:?}"));
            }
        }
        if part.is_empty() {
            return Err(format!("string is not a valid identifier: {s:?}"));
        }
        parts.push(part);
        match chars.next() {
            None => return Ok(parts),
            Some('.') => {}
            Some(_) => return Err(format!("string is not a valid identifier: {s:?}")),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ParseIdent {
    signature: Signature,
}

impl Default for ParseIdent {
    fn default() -> Self {
        Self {
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ParseIdent {
    fn name(&self) -> &str {
        "parse_ident"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Utf8,
            true,
        ))))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let strings: Vec<Option<String>> = match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Utf8(v)) => vec![v.clone()],
            ColumnarValue::Array(a) => a
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect(),
            other => return exec_err!("parse_ident: unexpected {other:?}"),
        };
        let mut b = ListBuilder::new(StringBuilder::new());
        for s in &strings {
            match s {
                None => b.append_null(),
                Some(s) => {
                    for p in
                        parse_ident(s).map_err(datafusion::error::DataFusionError::Execution)?
                    {
                        b.values().append_value(p);
                    }
                    b.append(true);
                }
            }
        }
        let out: ArrayRef = Arc::new(b.finish());
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(_) => {
                ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
            }
            ColumnarValue::Array(_) => ColumnarValue::Array(out),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_ident;

    #[test]
    fn like_postgres() {
        let ok: &[(&str, &[&str])] = &[
            ("cpu", &["cpu"]),
            ("public.cpu", &["public", "cpu"]),
            ("Public.CPU", &["public", "cpu"]),
            ("\"My T\".x", &["My T", "x"]),
            ("\"a\"\"b\"", &["a\"b"]),
        ];
        for (s, want) in ok {
            assert_eq!(parse_ident(s).unwrap(), *want, "{s}");
        }
        for bad in ["", "a.", ".a", "\"open", "a b.c\"x\""] {
            assert!(parse_ident(bad).is_err(), "{bad}");
        }
    }
}
