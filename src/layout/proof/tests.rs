//! The proof rule's unit tests: one per rule and per damage form.
use super::*;

fn marked(reply: &str, texts: &[&str]) -> Vec<Option<String>> {
    prove(texts, marked_entries(reply, "s"))
}

fn some(texts: &[&str]) -> Vec<Option<String>> {
    texts.iter().map(|t| Some((*t).to_owned())).collect()
}

const FOUR: [&str; 4] = ["one", "two", "three", "four"];

#[test]
fn a_clean_reply_proves_every_segment() {
    let reply =
        "Here you go:\n```\n<s1>ONE</s1>\r\n<s2> TWO\n</s2>\n<S3>THREE</s3>\n< s4 >FOUR</ s4>\n```\nDone.";
    assert_eq!(marked(reply, &FOUR), some(&["ONE", "TWO", "THREE", "FOUR"]));
}

#[test]
fn a_missing_middle_pair_takes_its_neighbours_with_it() {
    let reply = "<s1>ONE</s1><s2>TWO THREE</s2><s4>FOUR</s4>";
    assert_eq!(marked(reply, &FOUR), [Some("ONE".into()), None, None, None]);
}

#[test]
fn duplicated_and_out_of_order_pairs_are_missing_with_their_neighbours() {
    let dup = "<s1>ONE</s1><s2>TWO</s2><s2>B2</s2><s3>THREE</s3><s4>FOUR</s4>";
    assert_eq!(marked(dup, &FOUR), [None, None, None, Some("FOUR".into())]);
    // The pair out of order takes its neighbours in the reply (3 and 4) and by id (1
    // and 3): a merge whose freed id was filled later would look the same.
    let swapped = "<s1>ONE</s1><s3>THREE</s3><s2>TWO</s2><s4>FOUR</s4>";
    assert_eq!(marked(swapped, &FOUR), [None, None, None, None]);
    let filled_later = "<s1>A</s1><s2>B</s2><s3>C D</s3><s5>E</s5><s4></s4>";
    let five = ["a", "b", "c", "d", "e"];
    assert_eq!(marked(filled_later, &five)[2], None);
}

#[test]
fn an_unknown_id_proves_nothing() {
    let split = "<s1>A1</s1><s2>A2</s2><s3>TWO</s3><s4>THREE</s4><s5>FOUR</s5>";
    assert_eq!(marked(split, &FOUR), [None, None, None, None]);
}

#[test]
fn empty_segments_and_other_sources_are_damage() {
    let empty = "<s1>ONE</s1><s2> </s2><s3>THREE</s3><s4>FOUR</s4>";
    assert_eq!(
        marked(empty, &FOUR),
        [None, None, None, Some("FOUR".into())]
    );
    // At the last position, damage is read as a missing last pair (Rule 17 of docs/reference.md).
    // Pairs whose kept words refute every shift before them stay proven.
    let source = "<s1>ONE</s1><s2>TWO</s2><s3>THREE</s3><s4>three</s4>";
    assert_eq!(
        marked(source, &FOUR),
        [Some("ONE".into()), Some("TWO".into()), None, None]
    );
    let source = "<s1>ONE</s1><s2>TWO</s2><s3>four</s3><s4>FOUR</s4>";
    assert_eq!(
        marked(source, &FOUR),
        [Some("ONE".into()), None, None, None]
    );
    // Its own source is a translation (names, code).
    let own = "<s1>one</s1><s2>TWO</s2><s3>THREE</s3><s4>FOUR</s4>";
    assert_eq!(marked(own, &FOUR), some(&["one", "TWO", "THREE", "FOUR"]));
}

#[test]
fn broken_markers_are_damage() {
    let unclosed = "<s1>ONE</s1><s2>TWO<s3>THREE</s3><s4>FOUR</s4>";
    assert_eq!(
        marked(unclosed, &FOUR),
        [None, None, None, Some("FOUR".into())]
    );
    let crossed = "<s1>ONE</s2><s3>THREE</s3><s4>FOUR</s4>";
    assert_eq!(
        marked(crossed, &FOUR),
        [None, None, None, Some("FOUR".into())]
    );
}

#[test]
fn a_missing_last_pair_trusts_only_what_kept_words_prove() {
    // Merge of 2 and 3, renumbered: <s3> holds the fourth translation. The first keeps
    // its own word and none of the second's: proven; the rest is not.
    let renumbered = "<s1>ONE</s1><s2>TWO THREE</s2><s3>FOUR</s3>";
    assert_eq!(
        marked(renumbered, &FOUR),
        [Some("ONE".into()), None, None, None]
    );
    // The same shape with translations that keep no word: nothing is proven.
    let kept_none = "<s1>eins</s1><s2>zwei drei</s2><s3>vier</s3>";
    assert_eq!(marked(kept_none, &FOUR), [None, None, None, None]);
}

#[test]
fn a_missing_last_pair_trusts_segments_whose_lengths_rule_shifts_out() {
    let texts = [
        "a short one",
        "a much much longer paragraph of text that goes on and on for quite a while",
        "tiny",
        "another fairly long paragraph that has plenty of words in it, really",
        "last",
    ];
    let reply = "<s1>ein kurzer</s1>\n<s2>ein viel viel längerer Absatz mit Text, der immer weiter geht, eine ganze Weile</s2>\n<s3>winzig</s3>\n<s4>noch ein ziemlich langer Absatz, der wirklich viele Wörter enthält</s4>";
    let proven = marked(reply, &texts);
    assert!(proven[..3].iter().all(Option::is_some), "{proven:?}");
    // The fourth may hold the fifth's translation too: "last" is too short to tell.
    assert_eq!(proven[3..], [None, None]);
    // The same lengths, merged and renumbered: nothing is trusted.
    let merged = "<s1>ein kurzer ein viel viel längerer Absatz mit Text, der immer weiter geht, eine ganze Weile</s1>\n<s2>winzig</s2>\n<s3>noch ein ziemlich langer Absatz, der wirklich viele Wörter enthält</s3>\n<s4>letzter</s4>";
    assert!(marked(merged, &texts).iter().all(Option::is_none));
}

#[test]
fn a_count_preserving_shift_among_unlike_lengths_proves_nothing() {
    let texts = [
        "Hello",
        "a somewhat longer second paragraph",
        "third",
        "and the fourth paragraph of this batch",
    ];
    let t = |i: usize| format!("«{}»", texts[i].to_uppercase());
    let split_drop = format!(
        "<s1>«HEL</s1><s2>LO»</s2><s3>{}</s3><s4>{}</s4>",
        t(1),
        t(2)
    );
    assert!(marked(&split_drop, &texts).iter().all(Option::is_none));
    let split_merge = format!(
        "<s1>«HEL</s1><s2>LO»</s2><s3>{}</s3><s4>{} {}</s4>",
        t(1),
        t(2),
        t(3)
    );
    assert!(marked(&split_merge, &texts).iter().all(Option::is_none));
    let right = format!(
        "<s1>{}</s1><s2>{}</s2><s3>{}</s3><s4>{}</s4>",
        t(0),
        t(1),
        t(2),
        t(3)
    );
    assert!(marked(&right, &texts).iter().all(Option::is_some));
}

#[test]
fn a_last_segment_that_fits_one_of_two_others_fits() {
    // Japanese between German paragraphs: ratios 2.0 and 2.75 beside the last's 1.78.
    let texts = ["Grüße aus Köln", "東京の天気は晴れ", "Ein Fest 🎉 für alle"];
    let reply = "<s1>«Grüße aus Köln» 🇩🇪 übersetzt</s1><s2>«東京の天気は晴れ» 🇩🇪 übersetzt</s2><s3>«Ein Fest 🎉 für alle» 🇩🇪 übersetzt</s3>";
    assert!(marked(reply, &texts).iter().all(Option::is_some));
    // A remark far from both still does not fit.
    let remark =
        "<s1>«Grüße aus Köln» 🇩🇪 übersetzt</s1><s2>«東京の天気は晴れ» 🇩🇪 übersetzt</s2><s3>OK</s3>";
    assert_eq!(marked(remark, &texts)[2], None);
}

#[test]
fn short_labels_translated_longer_are_no_evidence_of_a_shift_and_none_against_one() {
    let texts = ["OK", "Cancel", "Hi", "Save changes", "Settings"];
    // Nothing shows a shift, and nothing refutes one either: a dropped "OK" with the rest
    // one pair early and a filler in the last would read the same. Nothing is guessed.
    let reply = "<s1>Einverstanden</s1><s2>Abbrechen</s2><s3>Hallo zusammen</s3><s4>Änderungen speichern</s4><s5>Einstellungen</s5>";
    assert!(marked(reply, &texts).iter().all(Option::is_none));
}

#[test]
fn a_number_found_in_another_paragraphs_segment_is_a_shift() {
    let texts = ["Chapter 12 begins", "the next part", "page 40 ends"];
    let reply = "<s1>Kapitel beginnt</s1><s2>12 der nächste Teil</s2><s3>Seite 40 endet</s3>";
    assert!(marked(reply, &texts).iter().all(Option::is_none));
}

#[test]
fn a_number_copied_into_another_paragraphs_segment_proves_nothing() {
    // Seen from SmolLM2-135M behind llama-server: the last two paragraphs of a batch of
    // ten blended, each segment holding both numbers, its own included.
    let texts = [
        "Our school was founded in 1907 by a teacher who had come down from the hills.",
        "The ferry carries 6293 passengers a day between the island and the mainland.",
        "The garden has 7546 roses, planted in long rows by a team of volunteers.",
    ];
    let reply = "<s1>Notre école a été fondée en 1907 par un enseignant.</s1>\n\
        <s2>The island has an annual 6293 visitors, and the island is home to a team of 7546 volunteers.</s2>\n\
        <s3>The island has an annual 7546. The island is home to a team of 6293.</s3>";
    assert_eq!(marked(reply, &texts), [None, None, None]);
    // The last two without the first: every segment there, blended.
    let two = "<s1>Il y a 6293 passagers et 7546 roses.</s1><s2>Le jardin a 7546 roses.</s2>";
    assert_eq!(marked(two, &texts[1..]), [None, None]);
    // Each number in its own segment alone: proven.
    let faithful = "<s1>Le ferry transporte 6293 passagers.</s1><s2>Le jardin a 7546 roses.</s2>";
    assert!(marked(faithful, &texts[1..]).iter().all(Option::is_some));
}

#[test]
fn a_repeated_translation_is_a_shift() {
    let reply = "<s1>ONE</s1><s2>TWO</s2><s3>TWO</s3><s4>FOUR</s4>";
    assert_eq!(marked(reply, &FOUR), [None, None, None, None]);
}

#[test]
fn object_and_array_replies() {
    let object = vec![
        ("2".to_owned(), "Y".to_owned()),
        ("1".to_owned(), "X".to_owned()),
    ];
    assert_eq!(prove(&["x", "y"], keyed_entries(object)), some(&["X", "Y"]));
    let unknown = vec![
        ("1".to_owned(), "A".to_owned()),
        ("translation".to_owned(), "B".to_owned()),
    ];
    assert_eq!(prove(&["x", "y"], keyed_entries(unknown)), [None, None]);
    let listed = listed_entries(vec!["A".into(), "".into(), "C".into()]);
    assert_eq!(prove(&["x", "y", "z"], listed), [None, None, None]);
}

#[test]
fn median_is_the_upper_middle_of_the_sorted_values_on_and_off_the_stack() {
    let mut state = 7u64;
    for len in 0..40 {
        let values: Vec<f64> = (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                // Few distinct values, so that ties occur.
                ((state >> 33) % 9) as f64 - 4.0
            })
            .collect();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let expected = sorted.get(len / 2).copied().unwrap_or(0.0);
        assert_eq!(median(&values), expected, "{values:?}");
        // With one more value, which crosses the stack's 16 at len 16.
        let mut more = sorted.clone();
        more.push(2.5);
        more.sort_by(f64::total_cmp);
        assert_eq!(
            median_with(&values, Some(2.5)),
            more[more.len() / 2],
            "{values:?}"
        );
    }
}

#[test]
fn a_drop_merge_and_split_before_a_missing_last_pair_is_read_by_numbers() {
    // Found by the `replies` fuzz target: paragraph 1 dropped, 2 and 3 merged, 4 split in
    // two, the numbers then copied in order and the last pair left out. Every length
    // stays near enough its source's for rule 17's length evidence to vouch for the first
    // three segments, which would put 2 and 3 under paragraph 1 and 4 under paragraph 2;
    // but paragraph 2's segment holds paragraph 4's number, which paragraph 4 (missing)
    // has and paragraph 2 has not.
    let texts = [
        "0 paragraph Hi",
        "1 paragraph A longer paragraph of words",
        "2 paragraph World wide",
        "3 paragraph The end.",
        "4 paragraph m\t\0\0\0\0\0\0\0��\u{f}\u{11}\u{11}��\u{1f}\0z\n\n\0\0�\u{9b6db}N��\u{59b}�������",
    ];
    let reply = "Here are the translations:\n<s1>«0 paragraph Hi»</s1>\n\
                 <s2>«2 paragraph World wide» «3 paragraph The end.»</s2>\n\
                 <s3>«4 paragraph m\t\0\0\0\0\0\0\0��\u{f}</s3>\n\
                 <s4>\u{11}\u{11}��\u{1f}\0z\n\n\0\0�\u{9b6db}N��\u{59b}�������»</s4>\n";
    let read = marked(reply, &texts);
    assert_eq!(read[1], None);
    assert_eq!(read[2], None);
    // The last pair dropped alone moves no number: the lengths vouch as before.
    let faithful =
        "<s1>«0 paragraph Hi»</s1>\n<s2>«1 paragraph A longer paragraph of words»</s2>\n\
                    <s3>«2 paragraph World wide»</s3>\n<s4>«3 paragraph The end.»</s4>";
    let read = marked(faithful, &texts);
    assert_eq!(read[4], None);
    assert_eq!(read[0].as_deref(), Some("«0 paragraph Hi»"));
}

#[test]
fn a_short_paragraph_merged_into_a_long_one_is_read_by_numbers() {
    // Found by the `replies` fuzz target: the first pair repeated and the third left out
    // (damage that takes their neighbours), then 4 and 5 merged into the fifth pair and
    // the freed last number filled with a remark. The short sixth paragraph barely changes
    // the merged pair's length, but its number is in the fifth paragraph's segment and
    // not in its own.
    let texts = [
        "0 paragraph 12 apples",
        "1 paragraph Hello",
        "2 paragraph ",
        "3 paragraph Überall & <s1> tags",
        "4 paragraph Überall & <s1> tags",
        "5 paragraph ",
    ];
    let reply = "<t1></t1>\n<t1>h 12 apples»</t1>\n<t2>«1 paragraph Hello» «2 paragraph»</t2>\n\
                 <t4>«3 paragraph Überall & <s1> tags»</t4>\n\
                 <t5>«4 paragraph Überall & <s1> tags» «5 paragraph»</t5>\n<t6>I hope this helps!</t6>";
    let read = prove(&texts, marked_entries(reply, "t"));
    assert_eq!(read[4], None);
    assert_eq!(read, vec![None; 6]);
}

#[test]
fn a_first_translation_split_in_two_before_a_missing_last_pair_is_read_by_numbers() {
    // Found by the `replies` fuzz target: the first translation split over two ids, the
    // second split again, the last pair left out. Read as they stand the lengths fit
    // (the shifted readings scatter only just more), but paragraph 1's number sits in
    // the segment of paragraph 2, which lacks it.
    let texts = [
        "0 paragraph \0\u{4}\u{4}\0",
        "1 paragraph",
        "2 paragraph",
        "3 paragraph",
        "4 paragraph The end.",
    ];
    let pairs = ["«0 paragr", "aph \0\u{4}\u{4}\0»", "«1 par", "agraph»"]
        .iter()
        .enumerate()
        .map(|(k, text)| ((k + 1).to_string(), text.to_string()))
        .collect();
    let proven = prove(&texts, keyed_entries(pairs));
    assert_eq!(proven, vec![None; 5], "nothing is proven");
}

#[test]
fn a_split_that_a_drop_hides_vouches_for_nothing_between_them() {
    // Found by the `replies` fuzz target: paragraph 0 dropped, paragraph 1 split over the
    // two pairs (markers by position, the count kept); the first paragraph's source
    // happens to hold the second one's words. The last pair holds the rest of its own
    // translation: the pair before it holds that translation's first part, not its own.
    let texts = [
        "0 paragraph x «1 paragraph y",
        "1 paragraph Überall & <s1> tags",
    ];
    let pairs = vec![
        ("1".to_owned(), "«1 paragraph Übe".to_owned()),
        ("2".to_owned(), "rall & <s1> tags»".to_owned()),
    ];
    assert_eq!(prove(&texts, keyed_entries(pairs)), [None, None]);
    // Two paragraphs split over five pairs, markers by position: the later pairs hold the
    // rest of the one before, the first pair the first part of its own.
    let texts = [
        "0 paragraph World wide",
        "1 paragraph <<<\0\0U\0\0\0\0\0\0\0\0\0\0\0<<<<<<<<<<<",
        "2 paragraph 12 apples",
        "3 paragraph Hello",
    ];
    let pairs: Vec<(String, String)> = [
        "«0 paragraph World wide»",
        "«1 paragraph <<<\0\0U\0\0\0\0",
        "\0\0\0\0\0\0\0<<<<<<<<<<<»",
        "«2 paragrap",
    ]
    .iter()
    .enumerate()
    .map(|(k, text)| ((k + 1).to_string(), (*text).to_owned()))
    .collect();
    let proven = prove(&texts, keyed_entries(pairs));
    assert_eq!(proven[1], None);
    assert_eq!(proven[2], None);
}

/// Four paragraphs of like lengths, each with a number of its own, and translations
/// that keep that number and no other word of their paragraph.
fn numbered_page() -> (Vec<String>, Vec<String>) {
    let sources = (0..4)
        .map(|k| format!("The report on page {k} was read out loud today."))
        .collect();
    let translations = (0..4)
        .map(|k| format!("Der Bericht zu Seite {k} wurde heute vorgelesen."))
        .collect();
    (sources, translations)
}

/// A reply that breaks off: `closed` whole under the markers of segments 0, 1 …, then the
/// next segment's opening marker and `open`.
fn broken_off(closed: &[&str], open: &str) -> String {
    let mut reply = String::new();
    for (i, text) in closed.iter().enumerate() {
        let (start, end) = crate::markers::pair("s", crate::markers::number(i));
        reply.push_str(&format!("{start}{text}{end}\n"));
    }
    let (start, _) = crate::markers::pair("s", crate::markers::number(closed.len()));
    reply + &start + open
}

/// What a marked string reply proves read whole (`early::whole_reading`, as the engine
/// reads one), after checking that no beginning of it, streamed, resolves more segments
/// early than that (never looser) and that the last beginning resolves as many.
fn read_whole_and_streamed(texts: &[&str], reply: &str) -> Vec<Option<String>> {
    let whole = crate::early::whole_reading(texts, reply, "s", None);
    let leading = whole.iter().take_while(|t| t.is_some()).count();
    let mut most = 0;
    for cut in (0..=reply.len()).filter(|&cut| reply.is_char_boundary(cut)) {
        let run = crate::early::leading_pairs(&reply[..cut], "s");
        let early = crate::early::proven_count(texts, &run, None);
        assert!(early <= leading, "{early} early at {cut}, {leading} whole");
        most = most.max(early);
    }
    assert_eq!(most, leading, "streamed and whole resolve alike");
    whole
}

#[test]
fn a_reply_that_breaks_off_resolves_the_segments_their_own_numbers_prove() {
    let (sources, translations) = numbered_page();
    let texts: Vec<&str> = sources.iter().map(String::as_str).collect();
    let t: Vec<&str> = translations.iter().map(String::as_str).collect();
    // Like lengths: the lengths refute no shift. Each segment holds its own paragraph's
    // number and not the next one's, which a drop or merge before it would have put
    // there; the pair being written shows its own number, so the second is not merged
    // with it, nor is it the rest of the second.
    let reply = broken_off(&t[..2], "Der Bericht zu Seite 2 wurde");
    assert_eq!(
        read_whole_and_streamed(&texts, &reply),
        [Some(t[0].to_owned()), Some(t[1].to_owned()), None, None]
    );
    // Broken off before the pair being written shows its number: the segment right before
    // the break stays missing (it may hold the next translation too, or be a part).
    let reply = broken_off(&t[..2], "Der Bericht zu Se");
    assert_eq!(
        read_whole_and_streamed(&texts, &reply),
        [Some(t[0].to_owned()), None, None, None]
    );
}

#[test]
fn a_reply_that_breaks_off_proves_nothing_when_the_numbers_are_swapped_or_absent() {
    let (sources, translations) = numbered_page();
    let texts: Vec<&str> = sources.iter().map(String::as_str).collect();
    let t: Vec<&str> = translations.iter().map(String::as_str).collect();
    // The first dropped, the rest one pair early: each pair holds the next one's number.
    let shifted = broken_off(&[t[1], t[2]], "Der Bericht zu Seite 3 wurde");
    assert_eq!(read_whole_and_streamed(&texts, &shifted), vec![None; 4]);
    // The first two swapped under markers kept in order.
    let swapped = broken_off(&[t[1], t[0]], "Der Bericht zu Seite 2 wurde");
    assert_eq!(read_whole_and_streamed(&texts, &swapped), vec![None; 4]);
    // No number kept (like lengths, no word in common): a drop would read the same.
    let plain: Vec<String> = ["null", "eins", "zwei"]
        .iter()
        .map(|k| format!("Der Bericht zu Seite {k} wurde heute vorgelesen."))
        .collect();
    let absent = broken_off(&[&plain[0], &plain[1]], &plain[2][..24]);
    assert_eq!(read_whole_and_streamed(&texts, &absent), vec![None; 4]);
}
