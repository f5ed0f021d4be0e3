use super::*;
use proptest::prelude::*;

fn masked(secrets: &[&str], text: &str) -> String {
    Masker::new(secrets.iter().copied()).mask(text).into_owned()
}

/// Issue 28, finding 17: a key echoed without its `sk-` prefix, or cut at
/// both ends, is masked; a piece shorter than 6 characters is left.
#[test]
fn pieces_at_any_position_are_masked() {
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    assert_eq!(masked(&[key], &format!("say {key} now")), "say *** now");
    assert_eq!(
        masked(&[key], "key proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ bad"),
        "key *** bad"
    );
    assert_eq!(
        masked(&[key], "key ...GHIJKLMN... bad"),
        "key ...***... bad"
    );
    assert_eq!(masked(&[key], "xxHIJKLMyy"), "xx***yy");
    assert_eq!(masked(&[key], "tail WXYZ ok"), "tail WXYZ ok");
    assert_eq!(
        masked(&[key], "twice sk-proj-AB and QRSTUV."),
        "twice *** and ***."
    );
    assert_eq!(masked(&[key], "é sk-proj-ABé"), "é ***é");
    assert_eq!(masked(&["ключ-секретный"], "a секрет b"), "a *** b");
    assert_eq!(masked(&[], "anything"), "anything");
}

/// Issue 28, finding 17: a short key is masked only as a whole word and
/// never garbles other words.
#[test]
fn short_secrets_are_masked_only_as_whole_words() {
    assert_eq!(
        masked(&["x"], "engine x failed: bad key x, try max"),
        "engine *** failed: bad key ***, try max"
    );
    assert_eq!(masked(&["ngine"], "engine failed"), "engine failed");
    assert_eq!(masked(&["abc12"], "Bearer abc12."), "Bearer ***.");
}

/// A credential header's value is masked whole; its scheme word alone
/// stays readable.
#[test]
fn a_header_value_is_masked_whole_and_its_token_in_pieces() {
    let m = Masker::with_whole(["tok-12345678"], ["Bearer tok-12345678"]);
    assert_eq!(m.mask("got Bearer tok-12345678!"), "got ***!");
    assert_eq!(m.mask("a Bearer scheme, k-1234"), "a Bearer scheme, ***");
}

#[test]
fn json_stays_valid_and_escaped_secrets_are_found() {
    let m = Masker::new(["tok\"en-with-quote"]);
    let value = serde_json::json!({"detail": "server said tok\"en-with-quote", "n": 1});
    let text = serde_json::to_string(&value).unwrap();
    assert!(m.hits_json(&text));
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    m.mask_value(&mut v);
    assert_eq!(v["detail"], "server said ***");
    assert_eq!(v["n"], 1);
}

/// Issue 28, finding 18: userinfo and query values never print.
#[test]
fn urls_lose_credentials_and_query_values() {
    assert_eq!(
        redact_url("https://u:pw@h.example/mcp?token=abc&x=1#f"),
        "https://h.example/mcp?token=***&x=***#f"
    );
    assert_eq!(redact_url("http://h:4318?key"), "http://h:4318?***");
    assert_eq!(redact_url("http://h/p"), "http://h/p");
    assert_eq!(
        redact_urls("GET http://a@h/x?token=s3cr3t ok; then https://k/q?a=b"),
        "GET http://h/x?token=*** ok; then https://k/q?a=***"
    );
}

fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.windows(PIECE).map(|w| w.iter().collect()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    /// Issue 28, findings 16, 17, 19: a random secret, embedded whole or in
    /// part at a random offset among random text and with a random prefix
    /// cut off, never survives as any 6-character piece.
    #[test]
    fn no_piece_of_a_secret_survives(
        secret in "[A-Za-z0-9_\\-\"é]{6,40}",
        before in "[ -~é]{0,30}",
        after in "[ -~é]{0,30}",
        cut in 0usize..40,
        keep in 6usize..40,
    ) {
        let chars: Vec<char> = secret.chars().collect();
        let cut = cut.min(chars.len() - PIECE);
        let keep = keep.min(chars.len() - cut);
        let part: String = chars[cut..cut + keep].iter().collect();
        let m = Masker::new([secret.as_str()]);
        let text = format!("{before}{part}{after}");
        let out = m.mask(&text);
        for piece in pieces(&secret) {
            prop_assert!(!out.contains(&piece), "{piece:?} in {out:?}");
        }
        // In JSON as well, read back.
        let json = serde_json::to_string(&serde_json::json!({ "text": text })).unwrap();
        prop_assert!(m.hits_json(&json));
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        m.mask_value(&mut v);
        let back = v["text"].as_str().unwrap();
        for piece in pieces(&secret) {
            prop_assert!(!back.contains(&piece), "{piece:?} in {back:?}");
        }
    }

    /// Issue 28, finding 17: a short secret never changes a word it is only
    /// a part of.
    #[test]
    fn short_secrets_leave_other_words_alone(
        secret in "[a-z0-9]{1,5}",
        words in prop::collection::vec("[a-z0-9]{1,12}", 1..12),
    ) {
        let text = words.join(" ");
        let out = masked(&[&secret], &text);
        let expect: Vec<&str> = words
            .iter()
            .map(|w| if *w == secret { "***" } else { w.as_str() })
            .collect();
        prop_assert_eq!(out, expect.join(" "));
    }
}
