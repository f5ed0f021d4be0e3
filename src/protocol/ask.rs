//! `ASK:<question>`: the master stops to ask its user something instead of
//! assigning or finishing (and `{"decision": "ask_user", "question": ...}`
//! in JSON mode). The run then waits for the user's answer
//! (`awaiting_user`). Pure parsers, as forgiving as the ASSIGN parser.

use serde_json::Value;

use super::strip_decoration;

/// The question of an `ASK:` line in a master reply, if it has one: the
/// rest of the line and the lines after it, up to a blank line. Any case,
/// list bullets, bold and code markers are forgiven; `ASK` needs its colon
/// ("ask the writer" is prose).
pub fn parse_ask(reply: &str) -> Option<String> {
    let lines: Vec<&str> = reply.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let s = strip_decoration(line);
        let word_len = s.bytes().take_while(u8::is_ascii_alphabetic).count();
        if !s[..word_len].eq_ignore_ascii_case("ask") {
            continue;
        }
        let rest = s[word_len..].trim_start_matches(['*', '_', '`']);
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let mut question = vec![rest.trim_matches(['*', '_', '`', ' ']).to_string()];
        question.extend(
            lines[i + 1..]
                .iter()
                .take_while(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string()),
        );
        let question = question.join("\n").trim().to_string();
        if !question.is_empty() {
            return Some(question);
        }
    }
    None
}

/// The question of a JSON-mode `ask_user` decision, if the reply is one.
pub fn parse_ask_json(reply: &str) -> Option<String> {
    let text = reply.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .map_or(text, |t| t.trim_end_matches("```"))
        .trim();
    let v: Value = serde_json::from_str(text).ok()?;
    if !v["decision"]
        .as_str()
        .is_some_and(|d| d.eq_ignore_ascii_case("ask_user"))
    {
        return None;
    }
    ["question", "answer"]
        .iter()
        .filter_map(|k| v[*k].as_str())
        .map(str::trim)
        .find(|q| !q.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_line_is_found_however_it_is_dressed() {
        assert_eq!(parse_ask("ASK: Which city?"), Some("Which city?".into()));
        assert_eq!(
            parse_ask(
                "I need one thing.\n- **ask**: Which city\nand which month?\n\nASSIGN:writer:x"
            ),
            Some("Which city\nand which month?".into())
        );
        assert_eq!(parse_ask("`Ask:` budget?"), Some("budget?".into()));
        assert_eq!(parse_ask("ask the writer to shorten it"), None);
        assert_eq!(parse_ask("ASK:"), None);
        assert_eq!(parse_ask("ASSIGN:writer:ask: nothing"), None);
        assert_eq!(parse_ask("TASK: no"), None);
    }

    #[test]
    fn an_ask_user_decision_in_json() {
        assert_eq!(
            parse_ask_json(
                r#"{"decision": "ask_user", "question": "Which city?", "assignments": []}"#
            ),
            Some("Which city?".into())
        );
        assert_eq!(
            parse_ask_json("```json\n{\"decision\": \"ASK_USER\", \"answer\": \"Budget?\"}\n```"),
            Some("Budget?".into())
        );
        assert_eq!(
            parse_ask_json(r#"{"decision": "done", "answer": "x"}"#),
            None
        );
        assert_eq!(
            parse_ask_json(r#"{"decision": "ask_user", "question": " "}"#),
            None
        );
        assert_eq!(parse_ask_json("ASK: not json"), None);
    }
}
