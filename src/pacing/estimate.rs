//! The built-in token estimate: how many tokens a text costs before any provider says so.
//!
//! The token bucket needs a call's cost before the call starts; the provider's reported
//! `usage` only arrives afterwards (and then corrects the estimate). A real tokenizer
//! would need its merge tables (megabytes) in the package, so this is a model instead:
//! one pass over the characters, each classified by its Unicode block and given that
//! class's weight in tokens, plus a weight for each word start in the alphabetic scripts
//! (a BPE tokenizer starts a new token at nearly every word).
//!
//! The weights were fitted (least squares on the relative error, then rounded and raised
//! per script, see below) to o200k_base, GPT-4o's encoding, on the multilingual sample
//! `bench/estimate/sample.json`: web-page prose, subtitles, UI strings, code, numbers and
//! URLs in 17 languages, plus mixed-script, emoji, code and number lines. Measured by
//! `node bench/estimate-tokens.mjs` on those 148 paragraphs: median ratio estimate/true
//! 1.04, median absolute error 9% (characters / 4: ratio 0.73, error 28%). Per language
//! the median ratio runs from 0.86 (Traditional Chinese) to 1.21 (Simplified Chinese);
//! every language's median absolute error is under 22%. What one script block cannot
//! tell apart stays: Ukrainian costs more tokens a letter than Russian, Traditional
//! Chinese more a character than Simplified, Turkish more than English.
//!
//! The estimate decides whether a call fits a tokens-per-minute budget before usage is
//! known, and an underestimate is the costly side (a 429, a pause for everyone), while an
//! overestimate only starts a call a little late. So the weights lean high: after the
//! fit, each script's weight was raised until its languages' median ratios sit at about
//! 1.0–1.15. Where one script serves languages of different density the weight falls
//! between them (Cyrillic: Russian 1.12, Ukrainian 0.88; CJK ideographs: Simplified 1.21,
//! Traditional 0.86), and the pacer's correction from reported usage does the rest.

use crate::byte_scan::ONES;

/// What a character is, as far as its token cost goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// ASCII letters: English prose is about 4 characters a token.
    Latin,
    /// ASCII digits: numbers are split into groups of at most three digits.
    Digit,
    /// ASCII punctuation and symbols: mostly a token each, some merge with a neighbour.
    Punct,
    /// White space: usually merged into the next word's token, but line breaks and runs
    /// of spaces are tokens of their own.
    Space,
    /// Latin letters with diacritics (Latin-1, Latin Extended, Vietnamese, combining
    /// marks): rarer in the vocabulary, so they break words into more pieces.
    LatinExt,
    Cyrillic,
    Greek,
    Arabic,
    Hebrew,
    /// Devanagari and the other Indic scripts (Bengali through Sinhala).
    Indic,
    /// Thai and Lao: no spaces between words, so no word starts either.
    Thai,
    /// CJK ideographs: about a token each (common ones less, rare ones more).
    Cjk,
    /// Hiragana and Katakana: frequent runs merge, slightly under a token each.
    Kana,
    /// Hangul syllables and jamo.
    Hangul,
    /// Emoji, with the joiner and variation selector of emoji sequences: a token or two.
    Emoji,
    /// CJK punctuation and full-width forms: a token each.
    CjkPunct,
    /// Anything else (general punctuation, currency, symbols): a token each.
    Other,
}

/// The weights' unit: every weight is a whole number of 1/200 tokens, so that a text's
/// estimate is summed exactly, in integers (one add a character, no rounding), and
/// divided once.
const UNITS_PER_TOKEN: f64 = 200.0;

/// Tokens per character in 1/200 tokens, indexed by `Class as usize`.
const WEIGHT: [u32; 17] = [
    27,  // Latin: 0.135
    134, // Digit: 0.67
    124, // Punct: 0.62
    82,  // Space: 0.41
    112, // LatinExt: 0.56
    54,  // Cyrillic: 0.27
    72,  // Greek: 0.36
    54,  // Arabic: 0.27
    66,  // Hebrew: 0.33
    54,  // Indic: 0.27
    88,  // Thai: 0.44
    166, // Cjk: 0.83
    140, // Kana: 0.70
    150, // Hangul: 0.75
    220, // Emoji: 1.10
    200, // CjkPunct: 1.00
    200, // Other: 1.00
];

/// Tokens added where a word of an alphabetic script starts (a letter after anything
/// that is not one), in 1/200 tokens (0.21): with the per-letter weight it makes short
/// words cost more per letter than long ones, as they do in a BPE vocabulary.
const WORD_START: u32 = 42;

impl Class {
    const fn of(c: u32) -> Class {
        match c {
            0x41..=0x5A | 0x61..=0x7A => Class::Latin,
            0x30..=0x39 => Class::Digit,
            0x09..=0x0D | 0x20 => Class::Space,
            0x00..=0x7F => Class::Punct,
            // × and ÷ sit among the Latin-1 letters.
            0xD7 | 0xF7 => Class::Other,
            0xC0..=0x24F | 0x300..=0x36F | 0x1E00..=0x1EFF => Class::LatinExt,
            0x370..=0x3FF | 0x1F00..=0x1FFF => Class::Greek,
            0x400..=0x52F => Class::Cyrillic,
            0x590..=0x5FF => Class::Hebrew,
            0x600..=0x6FF | 0x750..=0x77F | 0xFB50..=0xFDFF | 0xFE70..=0xFEFF => Class::Arabic,
            0x900..=0xDFF => Class::Indic,
            0xE00..=0xEFF => Class::Thai,
            0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => Class::Hangul,
            0x3000..=0x303F | 0xFF00..=0xFFEF => Class::CjkPunct,
            0x3040..=0x30FF => Class::Kana,
            0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF => Class::Cjk,
            0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x200D | 0xFE0F => Class::Emoji,
            0xA0 | 0x2000..=0x200A => Class::Space,
            _ => Class::Other,
        }
    }

    /// Scripts whose words are separated by spaces, so that a word start is a token start.
    const fn has_words(self) -> bool {
        matches!(
            self,
            Class::Latin
                | Class::LatinExt
                | Class::Cyrillic
                | Class::Greek
                | Class::Arabic
                | Class::Hebrew
                | Class::Indic
        )
    }
}

/// Estimated token count of `text` (o200k_base-like; see the module documentation for
/// the measured error). 0 for the empty text; never negative; never smaller for a text
/// than for any of its prefixes. One pass over the characters, no allocation.
pub fn estimate_tokens(text: &str) -> f64 {
    let units = ascii_units(text.as_bytes()).unwrap_or_else(|| {
        let mut units: u64 = 0;
        let mut in_word = false;
        for c in text.chars() {
            let class = Class::of(u32::from(c));
            let letter = class.has_words();
            let starts_word = letter && !in_word;
            units +=
                u64::from(WEIGHT[class as usize]) + u64::from(WORD_START) * u64::from(starts_word);
            in_word = letter;
        }
        units
    });
    units as f64 / UNITS_PER_TOKEN
}

/// The estimate of an ASCII text in 1/200 tokens, eight bytes at a time; `None` when a
/// byte is not ASCII (found in the same pass: no separate `is_ascii` scan). In ASCII a
/// character's class is one of four (letter, digit, space, punctuation), so the sum is
/// each class's count times its weight, plus the word starts: letters whose previous
/// byte is not one. Each count comes from per-byte range tests on a 64-bit word, added
/// up per byte lane and summed across the lanes every 31 words (before a lane's sum
/// could carry into the next). The counters are locals, not fields of a struct behind
/// a reference, so that they stay in registers: most texts are mostly ASCII, and this
/// is the costliest pass an item's text gets.
fn ascii_units(bytes: &[u8]) -> Option<u64> {
    let mut totals = [0u64; 4];
    // The letter bits of the previous word, whose last byte's bit the next word needs.
    let mut before = 0u64;
    // Every word or-ed together: a byte with its high bit set is not ASCII.
    let mut high = 0u64;
    let mut words = bytes.chunks_exact(8);
    loop {
        let (mut letters, mut digits, mut spaces, mut starts) = (0u64, 0u64, 0u64, 0u64);
        let mut count = |word: u64| {
            high |= word;
            // Letters: A-Z and a-z are the bytes that |0x20 maps into 0x61..=0x7A.
            let letter = between(word | (ONES * 0x20), 0x60, 0x7B);
            letters += letter >> 7;
            digits += between(word, 0x2F, 0x3A) >> 7;
            spaces += (between(word, 0x08, 0x0E) | between(word, 0x1F, 0x21)) >> 7;
            starts += (letter & !((letter << 8) | (before >> 56))) >> 7;
            before = letter;
        };
        let mut counted = 0;
        for word in (&mut words).take(31) {
            count(u64::from_le_bytes(word.try_into().unwrap_or_default()));
            counted += 1;
        }
        let last = counted < 31;
        if last {
            // The tail as the low bytes of a word, padded with zero bytes (none of the
            // counted classes).
            let tail = words.remainder();
            count(
                tail.iter()
                    .rev()
                    .fold(0, |word, &b| (word << 8) | u64::from(b)),
            );
        }
        if high & (ONES * 0x80) != 0 {
            return None;
        }
        // A lane's eight bytes hold at most 31 each, 248 in all, so the multiply's top
        // byte is their exact sum.
        for (total, lanes) in totals.iter_mut().zip([letters, digits, spaces, starts]) {
            *total += lanes.wrapping_mul(ONES) >> 56;
        }
        if last {
            break;
        }
    }
    let [letters, digits, spaces, starts] = totals;
    let others = bytes.len() as u64 - letters - digits - spaces;
    Some(
        letters * u64::from(WEIGHT[Class::Latin as usize])
            + digits * u64::from(WEIGHT[Class::Digit as usize])
            + spaces * u64::from(WEIGHT[Class::Space as usize])
            + others * u64::from(WEIGHT[Class::Punct as usize])
            + starts * u64::from(WORD_START),
    )
}

/// The high bit of each byte of `word` (every byte below 0x80) that lies strictly between
/// `low` and `high` (`high` at most 0x80): the "count bytes between m and n" test of the
/// bit-twiddling folklore. No byte's arithmetic carries or borrows into its neighbour, so
/// each byte's bit is exact. The words are ASCII, so the folklore's masks for bytes of
/// 0x80 and above (`word & 0x7F…`, `& !word`) are left out: four tests a word, they were
/// a fifth of the estimate's instructions.
const fn between(word: u64, low: u8, high: u8) -> u64 {
    let below = (ONES * (127 + high as u64)).wrapping_sub(word);
    let above = word.wrapping_add(ONES * (127 - low as u64));
    below & above & (ONES * 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subset of bench/estimate/sample.json (the first and the last paragraph of each
    /// language) with its o200k_base token counts. Regenerate both with
    /// `node bench/estimate-tokens.mjs --rust-table` after changing the sample.
    const SUBSET: &[(&str, &str, u32)] = &[
        ("en", "The city council voted on Tuesday to extend the bike lane along Harbor Street by another two miles, closing a gap that cyclists have complained about for years. Construction is expected to begin in early spring and last about four months, during which one lane of traffic will be closed between 9 a.m. and 4 p.m. on weekdays. Residents can comment on the plan at a public meeting on March 14 or online until the end of the month.", 91),
        ("en", "For most of the nineteenth century, the river was the town's main road: barges carried grain and timber downstream to the port, and returned loaded with coal, cloth and news from the capital. When the railway arrived in 1871, the wharves emptied within a decade. Today the old warehouses along the bank have been turned into flats, a small museum and a brewery, and the towpath is one of the most popular walks in the county.", 93),
        ("de", "Die Bundesregierung hat am Mittwoch einen Gesetzentwurf vorgelegt, der die Förderung von Wärmepumpen neu regeln soll. Haushalte mit geringem Einkommen sollen künftig bis zu 70 Prozent der Kosten erstattet bekommen, während der Grundzuschuss für alle Antragsteller bei 30 Prozent bleibt. Kritiker bemängeln, dass die Antragsverfahren weiterhin zu kompliziert seien.", 79),
        ("de", "Möchten Sie die Änderungen verwerfen? Nicht gespeicherte Daten gehen verloren.", 17),
        ("fr", "Le musée rouvrira ses portes le 15 septembre après deux ans de travaux de rénovation. Les visiteurs pourront découvrir une nouvelle aile consacrée à l'art contemporain ainsi qu'un jardin intérieur accessible gratuitement. Les billets sont déjà en vente sur le site officiel, et l'entrée reste gratuite pour les moins de 18 ans.", 64),
        ("fr", "Aucun résultat ne correspond à votre recherche. Essayez d'autres mots-clés.", 17),
        ("es", "El ayuntamiento ha anunciado que a partir del próximo lunes el servicio de autobuses nocturnos ampliará su horario hasta las tres de la madrugada durante los fines de semana. La medida, que se aplicará de forma experimental durante seis meses, busca reducir el uso del coche privado en el centro de la ciudad.", 63),
        ("es", "El archivo es demasiado grande. El tamaño máximo permitido es de 25 MB.", 16),
        ("ru", "В четверг в Москве прошла ежегодная конференция разработчиков, на которую собралось более трёх тысяч участников. Организаторы рассказали о новых инструментах для анализа данных и представили открытую библиотеку для обработки текстов на русском языке.", 54),
        ("ru", "Не удалось загрузить страницу. Проверьте подключение к интернету и попробуйте ещё раз.", 20),
        ("uk", "Київська міська рада ухвалила програму відновлення парків, яка передбачає висадку понад двох тисяч дерев і облаштування нових велосипедних доріжок. Роботи розпочнуться навесні та триватимуть до кінця року.", 62),
        ("uk", "Ваш запит надіслано. Ми відповімо протягом двох робочих днів.", 23),
        ("el", "Η Αθήνα υποδέχτηκε φέτος περισσότερους από επτά εκατομμύρια επισκέπτες, σύμφωνα με τα στοιχεία του υπουργείου Τουρισμού. Οι περισσότεροι ταξιδιώτες προέρχονταν από τη Γερμανία, τη Γαλλία και τις Ηνωμένες Πολιτείες.", 71),
        ("el", "Ο κωδικός πρόσβασης πρέπει να έχει τουλάχιστον οκτώ χαρακτήρες.", 21),
        ("ar", "أعلنت وزارة التعليم عن إطلاق منصة إلكترونية جديدة تتيح للطلاب متابعة الدروس عن بعد، وتضم أكثر من خمسة آلاف مقطع فيديو تعليمي في مختلف المواد الدراسية. وتهدف المنصة إلى دعم التعلم الذاتي وتقليل الفجوة بين المدن والقرى.", 59),
        ("ar", "تم حفظ التغييرات بنجاح. يمكنك الآن إغلاق هذه النافذة.", 18),
        ("he", "עיריית תל אביב הודיעה כי בשבוע הבא יחלו עבודות לשיפוץ הטיילת, שיימשכו כחצי שנה. במהלך העבודות יוסטו שבילי ההליכה והאופניים, והכניסה לחוף תתאפשר דרך שלושה מעברים זמניים.", 63),
        ("he", "הסיסמה שגויה. נסה שוב או אפס את הסיסמה.", 19),
        ("hi", "भारतीय मौसम विभाग ने अगले तीन दिनों तक उत्तर भारत के कई राज्यों में भारी बारिश की चेतावनी जारी की है। लोगों को सलाह दी गई है कि वे अनावश्यक यात्रा से बचें और नदियों के किनारे न जाएं।", 51),
        ("hi", "आपका भुगतान सफलतापूर्वक पूरा हो गया है।", 14),
        ("th", "กรมอุตุนิยมวิทยาประกาศเตือนว่าในช่วงสัปดาห์นี้จะมีฝนตกหนักในหลายพื้นที่ของภาคเหนือและภาคตะวันออกเฉียงเหนือ ประชาชนควรติดตามข่าวสารอย่างใกล้ชิดและหลีกเลี่ยงการเดินทางในพื้นที่เสี่ยงน้ำท่วม", 76),
        ("th", "บันทึกการเปลี่ยนแปลงเรียบร้อยแล้ว", 14),
        ("zh-Hans", "国家统计局今天发布的数据显示，今年前三个季度全国居民人均可支配收入同比增长百分之五点二，其中城镇居民收入增长略低于农村居民。专家认为，消费市场正在逐步恢复。", 48),
        ("zh-Hans", "网络连接失败，请检查网络设置后稍后重试。", 13),
        ("zh-Hant", "臺北市政府宣布，明年起將在市區增設二十座公共自行車站，並延長捷運末班車的營運時間至凌晨一點。市府表示，這項措施希望鼓勵民眾減少使用私人汽車。", 61),
        ("zh-Hant", "您的訂單已送出，我們會盡快為您處理。", 17),
        ("ja", "気象庁によると、今週末は西日本を中心に大雨となるおそれがあり、土砂災害や川の増水に十分な注意が必要です。特に九州地方では、一時間に五十ミリ以上の非常に激しい雨が降る見込みです。", 71),
        ("ja", "パスワードをお忘れの方はこちら", 11),
        ("ko", "서울시는 내년부터 한강 공원에 자전거 전용 도로를 추가로 설치하고, 야간 조명을 개선하는 사업을 추진한다고 밝혔다. 이번 사업에는 총 120억 원의 예산이 투입될 예정이다.", 52),
        ("ko", "변경 사항이 저장되었습니다.", 7),
        ("vi", "Theo Tổng cục Thống kê, kim ngạch xuất khẩu của Việt Nam trong chín tháng đầu năm tăng hơn mười phần trăm so với cùng kỳ năm trước, trong đó điện thoại và linh kiện điện tử vẫn là mặt hàng chủ lực.", 52),
        ("vi", "Không tìm thấy kết quả phù hợp. Vui lòng thử lại với từ khóa khác.", 18),
        ("tr", "İstanbul Büyükşehir Belediyesi, önümüzdeki aydan itibaren metro hatlarında gece seferlerinin hafta sonları sabaha kadar devam edeceğini açıkladı. Yetkililer, uygulamanın yolcu yoğunluğuna göre yeniden değerlendirileceğini belirtti.", 56),
        ("tr", "Şifreniz en az sekiz karakterden oluşmalıdır.", 13),
        ("mixed", "Click „Speichern“ to save, then 送信 to send.", 15),
        ("mixed", "Windows 11 の設定アプリを開き、「システム」→「ディスプレイ」を選択して、解像度を 1920 × 1080 に変更してください。", 41),
        ("emoji", "Happy birthday!!! 🎉🎂🥳 Have the best day ever ❤️", 15),
        ("emoji", "Спасибо за подарок 🎁🙏 очень приятно 🥰", 11),
        ("code", "const result = await fetch(`${baseUrl}/v1/chat/completions`, { method: 'POST', headers });", 24),
        ("code", "{\"id\": 42, \"title\": \"Hello\", \"tags\": [\"news\", \"tech\"], \"published\": true}", 26),
        ("numbers", "https://www.example.com/products/2024/summer-collection?ref=newsletter&utm_source=email", 21),
        ("numbers", "00:01:23,456 --> 00:01:25,789", 16),
    ];

    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        assert!(n > 0);
        if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        }
    }

    fn chars_over_4(text: &str) -> f64 {
        text.chars().count() as f64 / 4.0
    }

    /// Median absolute relative error of `estimate` on the subset's paragraphs whose
    /// language is accepted by `lang`.
    fn median_error(lang: impl Fn(&str) -> bool, estimate: impl Fn(&str) -> f64) -> f64 {
        median(
            SUBSET
                .iter()
                .filter(|(l, _, _)| lang(l))
                .map(|&(_, text, tokens)| (estimate(text) / f64::from(tokens) - 1.0).abs())
                .collect(),
        )
    }

    /// The estimate as the sum of each character's weight in tokens, one plain pass
    /// over `chars()`, every character classified.
    fn estimate_char_by_char(text: &str) -> f64 {
        let mut tokens = 0.0;
        let mut in_word = false;
        for c in text.chars() {
            let class = Class::of(u32::from(c));
            tokens += f64::from(WEIGHT[class as usize]) / UNITS_PER_TOKEN;
            let letter = class.has_words();
            if letter && !in_word {
                tokens += f64::from(WORD_START) / UNITS_PER_TOKEN;
            }
            in_word = letter;
        }
        tokens
    }

    #[test]
    fn the_integer_sum_is_the_sum_of_the_weights() {
        let every_ascii: String = (0u8..128).map(char::from).collect();
        let mixed = format!("{every_ascii}é中🎉 a{every_ascii}");
        // A character outside ASCII before, in and after the first block of 31 words.
        let late: Vec<String> = [0, 7, 100, 247, 248, 255, 299]
            .iter()
            .map(|&at| format!("{}é{}", &"a b1".repeat(75)[..at], "c".repeat(8)))
            .collect();
        let texts = SUBSET.iter().map(|(_, text, _)| *text);
        let texts = texts.chain(late.iter().map(String::as_str));
        for text in texts.chain([every_ascii.as_str(), mixed.as_str(), "", "é", "a"]) {
            let (ours, summed) = (estimate_tokens(text), estimate_char_by_char(text));
            assert!(
                (ours - summed).abs() <= 1e-9 * summed.max(1.0),
                "{text:?}: {ours} vs {summed}"
            );
        }
        // Exact: 4 Latin letters, one word start.
        assert_eq!(estimate_tokens("word"), (4.0 * 27.0 + 42.0) / 200.0);
    }

    #[test]
    fn the_ascii_counts_are_the_weights_of_every_byte() {
        // Every pair of ASCII bytes at every offset of a word, and texts of every length
        // around the eight-byte steps, against the character-by-character sum.
        let mut texts: Vec<String> = Vec::new();
        for a in 0u8..128 {
            for b in 0u8..128 {
                let pair = [char::from(a), char::from(b)];
                texts.push(pair.iter().collect());
                texts.push(format!("abcdef{}{}x9", pair[0], pair[1]));
                texts.push(format!("abcde {}{}", pair[0], pair[1]));
            }
        }
        for len in 0..40 {
            texts.push("Ab1 ,\tZ\n".chars().cycle().take(len).collect());
        }
        for text in &texts {
            let mut units = 0;
            let mut in_word = false;
            for c in text.chars() {
                let class = Class::of(u32::from(c));
                units += WEIGHT[class as usize];
                units += WORD_START * u32::from(class.has_words() && !in_word);
                in_word = class.has_words();
            }
            assert_eq!(
                estimate_tokens(text),
                f64::from(units) / UNITS_PER_TOKEN,
                "{text:?}"
            );
        }
    }

    #[test]
    fn estimate_of_empty_text_is_zero() {
        assert_eq!(estimate_tokens(""), 0.0);
    }

    #[test]
    fn estimate_grows_with_every_character() {
        // Every prefix of a mixed-script text costs strictly less than the next one: no
        // class is free, so a longer text never looks cheaper.
        let text = "Hello, мир! 你好 🎉 สวัสดี 42\n";
        let mut last = 0.0;
        for (i, _) in text.char_indices().skip(1) {
            let estimate = estimate_tokens(&text[..i]);
            assert!(estimate > last, "{:?}: {estimate} after {last}", &text[..i]);
            last = estimate;
        }
        assert!(estimate_tokens(text) > last);
    }

    #[test]
    fn estimate_of_english_prose_is_about_four_characters_a_token() {
        // 61 tokens in o200k_base, 278 characters.
        let text = "I bought this kettle after my old one started leaking, and so far I'm very \
                    happy with it. It boils a full litre in under three minutes, the handle \
                    stays cool, and the automatic shut-off works every time. My only complaint \
                    is that the lid is a little stiff to open with one hand.";
        let estimate = estimate_tokens(text);
        assert!((55.0..=75.0).contains(&estimate), "{estimate}");
    }

    #[test]
    fn estimate_of_cjk_is_about_a_token_a_character() {
        for text in [
            "国家统计局今天发布的数据显示",
            "這本小說講述一個年輕人離開家鄉",
            "気象庁によると",
        ] {
            let per_char = estimate_tokens(text) / text.chars().count() as f64;
            assert!((0.5..=1.5).contains(&per_char), "{text}: {per_char}");
        }
    }

    #[test]
    fn estimate_median_error_on_the_sample_subset_is_under_20_percent() {
        // The quota work allows 25%. The full sample measures 9% and this subset 12%, so
        // 20% leaves room for a retuned weight or two, and still fails characters / 4,
        // which measures 25% on the subset.
        let error = median_error(|_| true, estimate_tokens);
        assert!(error < 0.20, "median absolute error {error}");
        assert!(median_error(|_| true, chars_over_4) >= 0.20);
    }

    #[test]
    fn estimate_of_every_subset_paragraph_is_within_60_to_160_percent() {
        // A median over all languages hides one script weighted wrong; no paragraph of the
        // subset is off by more than half (the worst, short UI strings, measure 0.83 and
        // 1.49), while a script weight off by 2× puts its paragraphs out of this range.
        for &(lang, text, tokens) in SUBSET {
            let ratio = estimate_tokens(text) / f64::from(tokens);
            assert!(
                (0.6..=1.6).contains(&ratio),
                "{lang} {text:?}: ratio {ratio}"
            );
        }
    }

    #[test]
    fn estimate_leans_high_rather_than_low() {
        // An underestimate lets a call overrun the token budget; the median ratio stays
        // between even and 20% over.
        let ratio = median(
            SUBSET
                .iter()
                .map(|&(_, text, tokens)| estimate_tokens(text) / f64::from(tokens))
                .collect(),
        );
        assert!((0.97..=1.2).contains(&ratio), "median ratio {ratio}");
    }

    #[test]
    fn estimate_beats_chars_over_4_on_cjk_and_thai() {
        let cjk = |l: &str| matches!(l, "zh-Hans" | "zh-Hant" | "ja" | "ko");
        let thai = |l: &str| l == "th";
        for (name, lang) in [("CJK", &cjk as &dyn Fn(&str) -> bool), ("Thai", &thai)] {
            let ours = median_error(lang, estimate_tokens);
            let naive = median_error(lang, chars_over_4);
            assert!(
                ours < 0.25 && ours < naive,
                "{name}: {ours} vs chars/4 {naive}"
            );
        }
    }
}
