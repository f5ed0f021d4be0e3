//! Text as the CLI shows it on a terminal: model and server text can hold
//! escape sequences and bidirectional overrides, shown escaped instead of
//! obeyed.

use std::borrow::Cow;

/// Text saved from models (and folder names) as it may be shown on a
/// terminal: newlines and tabs stay, every other control character (the
/// ESC of an escape sequence, a carriage return, a bell, C1 controls) is
/// written as a visible `\u{..}` escape instead of being obeyed, and so is
/// a bidirectional override or isolate.
pub(crate) fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_on_terminal(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Control characters (but newline and tab), which a terminal obeys, and
/// the bidirectional overrides and isolates, which make it show text in an
/// order other than the one it has ("Trojan Source").
fn unsafe_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// The first line of `s`, cut to `max` characters with an ellipsis, safe
/// to print on a terminal (see [`terminal_safe`]).
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let line = s.trim().lines().next().unwrap_or("").trim();
    let line = if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    };
    terminal_safe(&line).into_owned()
}
