//! Server-side validation of every form field, with a message that names
//! the field and says what is wrong.
//!
//! The browser may check too (for comfort); the server never trusts it.
//! Every check has its messages in English (`personal`, ...) and in the
//! page's language (`personal_in`, ...).
//! Volatile fields (the card number, the one-time code) are checked here
//! and then dropped: what comes out is what the chart may keep.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

use crate::words::{fill, Lang};

/// The English or the Spanish of a message.
fn tr<'a>(lang: Lang, en: &'a str, es: &'a str) -> &'a str {
    match lang {
        Lang::En => en,
        Lang::Es => es,
    }
}

/// Field name -> message, for the page to show next to each field.
pub type Errors = BTreeMap<String, String>;

/// The plans on offer: (id, label, monthly price in cents).
pub const PLANS: &[(&str, &str, u64)] = &[
    ("basic", "Basic", 900),
    ("pro", "Pro", 2900),
    ("team", "Team", 7900),
];

fn field<'a>(form: &'a BTreeMap<String, String>, name: &str) -> &'a str {
    form.get(name).map(|s| s.trim()).unwrap_or("")
}

/// Checks a person's name, normalized to NFC (a name typed decomposed, "Jose"
/// and a combining acute accent, is stored as the one letter "José"): the
/// letters and marks names are written with (Unicode's letter and mark
/// categories: an accent, a Devanagari virama, a Thai tone mark), spaces,
/// hyphens, apostrophes (`'` and `’`) and dots; a zero-width (non-)joiner
/// after a letter. A mark must follow a letter or another mark. The name as stored, or `None` with the message in
/// `errors`; a refused character is named as the user sees it.
fn check_name(errors: &mut Errors, lang: Lang, key: &str, label: &str, v: &str) -> Option<String> {
    let name: String = v.nfc().collect();
    let n = name.chars().count();
    let refuse = |errors: &mut Errors, why: String| {
        errors.insert(key.into(), why);
        None
    };
    if n == 0 {
        return refuse(
            errors,
            fill(tr(lang, "{} is required.", "{}: es obligatorio."), &[label]),
        );
    }
    if n > 80 {
        return refuse(
            errors,
            fill(
                tr(
                    lang,
                    "{} must be at most 80 characters (it has {}).",
                    "{}: como mucho 80 caracteres (tiene {}).",
                ),
                &[label, &n.to_string()],
            ),
        );
    }
    let mut after_letter = false;
    for c in name.chars() {
        let ok = match c.general_category_group() {
            GeneralCategoryGroup::Letter => true,
            GeneralCategoryGroup::Mark => after_letter,
            // Zero-width joiner and non-joiner, as Persian and Indic names
            // use them between letters.
            _ if matches!(c, '\u{200c}' | '\u{200d}') => after_letter,
            _ => matches!(c, ' ' | '-' | '\'' | '\u{2019}' | '.'),
        };
        if !ok {
            let why = if c.general_category_group() == GeneralCategoryGroup::Mark {
                fill(
                    tr(
                        lang,
                        "{} has a mark that belongs on a letter, {}, with no letter before it.",
                        "{}: tiene un signo que va sobre una letra, {}, sin letra delante.",
                    ),
                    &[label, &shown(c)],
                )
            } else {
                fill(
                    tr(
                        lang,
                        "{} may contain letters, spaces, hyphens, apostrophes and dots, not {}.",
                        "{}: puede llevar letras, espacios, guiones, apóstrofos y puntos, no {}.",
                    ),
                    &[label, &shown(c)],
                )
            };
            return refuse(errors, why);
        }
        after_letter = matches!(
            c.general_category_group(),
            GeneralCategoryGroup::Letter | GeneralCategoryGroup::Mark
        ) || matches!(c, '\u{200c}' | '\u{200d}');
    }
    Some(name)
}

/// A character as a user sees it in a message: itself in quotes (a mark on
/// a dotted circle, as type specimens show one alone), with its code point
/// (U+0301) for the ones that do not show (spaces, controls, format
/// characters).
fn shown(c: char) -> String {
    let code = format!("U+{:04X}", u32::from(c));
    match c.general_category_group() {
        GeneralCategoryGroup::Mark => format!("\u{201c}\u{25cc}{c}\u{201d} ({code})"),
        GeneralCategoryGroup::Separator | GeneralCategoryGroup::Other => code,
        _ => format!("\u{201c}{c}\u{201d} ({code})"),
    }
}

/// The personal-data step: `name`, `email`; messages in English.
pub fn personal(form: &BTreeMap<String, String>) -> Result<Value, Errors> {
    personal_in(form, Lang::En)
}

/// [`personal`], with messages in `lang`.
pub fn personal_in(form: &BTreeMap<String, String>, lang: Lang) -> Result<Value, Errors> {
    let mut e = Errors::new();
    let label = tr(lang, "Full name", "Nombre completo");
    let name = check_name(&mut e, lang, "name", label, field(form, "name"));
    let email = field(form, "email");
    if let Err(m) = check_email(email, lang) {
        e.insert("email".into(), m);
    }
    if e.is_empty() {
        Ok(json!({"name": name.unwrap_or_default(), "email": email.to_ascii_lowercase()}))
    } else {
        Err(e)
    }
}

fn check_email(email: &str, lang: Lang) -> Result<(), String> {
    let no = |en: &str, es: &str| Err(tr(lang, en, es).to_string());
    if email.is_empty() {
        return no("Email is required.", "El correo es obligatorio.");
    }
    if email.len() > 254 {
        return no(
            "Email must be at most 254 characters.",
            "El correo tiene como mucho 254 caracteres.",
        );
    }
    let Some((local, domain)) = email.split_once('@') else {
        return no(
            "Email must contain an @, as in name@example.com.",
            "El correo lleva una @, como en nombre@example.com.",
        );
    };
    if local.is_empty() || domain.contains('@') {
        return no(
            "Email must have exactly one @ with a name before it.",
            "El correo lleva una sola @ con un nombre delante.",
        );
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2
        || labels
            .iter()
            .any(|l| l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    {
        return Err(fill(
            tr(
                lang,
                "Email domain {} is not a domain name like example.com.",
                "El dominio del correo, {}, no es un nombre de dominio como example.com.",
            ),
            &[&format!("{domain:?}")],
        ));
    }
    if email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return no(
            "Email must not contain spaces.",
            "El correo no puede llevar espacios.",
        );
    }
    Ok(())
}

/// The plan step: `plan` (one of [`PLANS`]), `billing` (monthly | yearly);
/// messages in English.
pub fn plan(form: &BTreeMap<String, String>) -> Result<Value, Errors> {
    plan_in(form, Lang::En)
}

/// [`plan`], with messages in `lang`.
pub fn plan_in(form: &BTreeMap<String, String>, lang: Lang) -> Result<Value, Errors> {
    let mut e = Errors::new();
    let plan = field(form, "plan");
    let price = PLANS.iter().find(|p| p.0 == plan).map(|p| p.2);
    if price.is_none() {
        e.insert(
            "plan".into(),
            if plan.is_empty() {
                tr(lang, "Choose a plan.", "Elige un plan.").into()
            } else {
                fill(
                    tr(
                        lang,
                        "There is no plan {}; choose Basic, Pro or Team.",
                        "No hay ningún plan {}; elige Basic, Pro o Team.",
                    ),
                    &[&format!("{plan:?}")],
                )
            },
        );
    }
    let billing = field(form, "billing");
    if !matches!(billing, "monthly" | "yearly") {
        e.insert(
            "billing".into(),
            tr(
                lang,
                "Billing must be monthly or yearly.",
                "La facturación es mensual o anual.",
            )
            .into(),
        );
    }
    match (e.is_empty(), price) {
        (true, Some(p)) => {
            let amount = if billing == "yearly" { p * 10 } else { p };
            Ok(json!({"id": plan, "billing": billing, "amount_cents": amount}))
        }
        _ => Err(e),
    }
}

/// The card sub-step: `card_number` and `otp` are volatile (checked, never
/// kept); `expiry` (MM/YY, not past), `holder`. `today` is (year, month).
/// Messages in English.
pub fn card(form: &BTreeMap<String, String>, today: (u32, u32)) -> Result<Value, Errors> {
    card_in(form, today, Lang::En)
}

/// [`card`], with messages in `lang`.
pub fn card_in(
    form: &BTreeMap<String, String>,
    today: (u32, u32),
    lang: Lang,
) -> Result<Value, Errors> {
    let mut e = Errors::new();
    let t = |en, es| tr(lang, en, es).to_string();
    let number: String = field(form, "card_number")
        .chars()
        .filter(|c| *c != ' ' && *c != '-')
        .collect();
    if number.is_empty() {
        e.insert(
            "card_number".into(),
            t(
                "Card number is required.",
                "El número de tarjeta es obligatorio.",
            ),
        );
    } else if !number.chars().all(|c| c.is_ascii_digit()) {
        e.insert(
            "card_number".into(),
            t(
                "Card number may contain only digits and spaces.",
                "El número de tarjeta lleva solo cifras y espacios.",
            ),
        );
    } else if !(12..=19).contains(&number.len()) {
        e.insert(
            "card_number".into(),
            fill(
                tr(
                    lang,
                    "Card number must have 12 to 19 digits (it has {}).",
                    "El número de tarjeta tiene de 12 a 19 cifras (este tiene {}).",
                ),
                &[&number.len().to_string()],
            ),
        );
    } else if !luhn(&number) {
        e.insert(
            "card_number".into(),
            t(
                "Card number is mistyped (its check digit is wrong).",
                "El número de tarjeta está mal escrito (su dígito de control no cuadra).",
            ),
        );
    }
    let expiry = field(form, "expiry");
    if let Err(m) = check_expiry(expiry, today, lang) {
        e.insert("expiry".into(), m);
    }
    let label = tr(lang, "Name on card", "Nombre en la tarjeta");
    let holder = check_name(&mut e, lang, "holder", label, field(form, "holder"));
    let otp = field(form, "otp");
    if otp.len() != 6 || !otp.chars().all(|c| c.is_ascii_digit()) {
        e.insert(
            "otp".into(),
            t(
                "The one-time code is the 6 digits your bank sent you.",
                "El código de un solo uso son las 6 cifras que te ha enviado tu banco.",
            ),
        );
    }
    if !e.is_empty() {
        return Err(e);
    }
    let last4 = &number[number.len() - 4..];
    Ok(json!({
        "method": "card",
        "last4": last4,
        "expiry": expiry,
        "holder": holder,
        "token": format!("tok_{}", crate::ids::random_hex(12)),
    }))
}

fn check_expiry(v: &str, (year, month): (u32, u32), lang: Lang) -> Result<(), String> {
    let bad = || {
        fill(
            tr(
                lang,
                "Expiry must be MM/YY, as in 04/29 (got {}).",
                "La caducidad se escribe MM/AA, como 04/29 (no {}).",
            ),
            &[&format!("{v:?}")],
        )
    };
    let (m, y) = v.split_once('/').ok_or_else(bad)?;
    let (m, y): (u32, u32) = (
        m.trim().parse().map_err(|_| bad())?,
        y.trim().parse().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&m) || y > 99 {
        return Err(bad());
    }
    let y = 2000 + y;
    if (y, m) < (year, month) {
        return Err(fill(
            tr(
                lang,
                "This card expired in {}.",
                "Esta tarjeta caducó en {}.",
            ),
            &[&format!("{m:02}/{:02}", y % 100)],
        ));
    }
    if y > year + 20 {
        return Err(tr(
            lang,
            "Expiry is more than 20 years away; check the year.",
            "La caducidad está a más de 20 años; revisa el año.",
        )
        .into());
    }
    Ok(())
}

/// The Luhn check digit test (ISO/IEC 7812).
pub fn luhn(digits: &str) -> bool {
    let mut sum = 0;
    for (i, c) in digits.bytes().rev().enumerate() {
        let mut d = u32::from(c - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

/// The bank-account sub-step: `iban` (ISO 13616, mod 97), `account_holder`;
/// messages in English.
pub fn bank(form: &BTreeMap<String, String>) -> Result<Value, Errors> {
    bank_in(form, Lang::En)
}

/// [`bank`], with messages in `lang`.
pub fn bank_in(form: &BTreeMap<String, String>, lang: Lang) -> Result<Value, Errors> {
    let mut e = Errors::new();
    let iban: String = field(form, "iban")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_uppercase();
    if let Err(m) = check_iban(&iban, lang) {
        e.insert("iban".into(), m);
    }
    let holder = check_name(
        &mut e,
        lang,
        "account_holder",
        tr(lang, "Account holder", "Titular de la cuenta"),
        field(form, "account_holder"),
    );
    if !e.is_empty() {
        return Err(e);
    }
    Ok(json!({
        "method": "bank",
        "last4": &iban[iban.len() - 4..],
        "country": &iban[..2],
        "holder": holder,
        "token": format!("iban_{}", crate::ids::random_hex(12)),
    }))
}

fn check_iban(iban: &str, lang: Lang) -> Result<(), String> {
    let no = |en: &str, es: &str| Err(tr(lang, en, es).to_string());
    if iban.is_empty() {
        return no("IBAN is required.", "El IBAN es obligatorio.");
    }
    if !(15..=34).contains(&iban.len()) || !iban.chars().all(|c| c.is_ascii_alphanumeric()) {
        return no(
            "An IBAN has 15 to 34 letters and digits, as in DE89 3704 0044 0532 0130 00.",
            "Un IBAN tiene de 15 a 34 letras y cifras, como DE89 3704 0044 0532 0130 00.",
        );
    }
    let b = iban.as_bytes();
    if !b[0].is_ascii_alphabetic()
        || !b[1].is_ascii_alphabetic()
        || !b[2].is_ascii_digit()
        || !b[3].is_ascii_digit()
    {
        return no(
            "An IBAN starts with a country code and two check digits, as in DE89.",
            "Un IBAN empieza por el código del país y dos dígitos de control, como DE89.",
        );
    }
    let mut rem: u32 = 0;
    for c in iban[4..].chars().chain(iban[..4].chars()) {
        let v = c.to_digit(36).expect("alphanumeric");
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    if rem != 1 {
        return no(
            "This IBAN is mistyped (its check digits do not match).",
            "Este IBAN está mal escrito (sus dígitos de control no cuadran).",
        );
    }
    Ok(())
}

/// Today's (year, month) in UTC, from the system clock.
pub fn today() -> (u32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as u32, m as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn personal_messages_name_the_field() {
        let e = personal(&form(&[("name", ""), ("email", "a@b")])).unwrap_err();
        assert_eq!(e["name"], "Full name is required.");
        assert!(e["email"].contains("not a domain name"), "{}", e["email"]);
        let ok = personal(&form(&[
            ("name", "Ada Lovelace"),
            ("email", "Ada@Example.org"),
        ]))
        .unwrap();
        assert_eq!(ok["email"], "ada@example.org");
    }

    #[test]
    fn real_names_are_accepted_and_stored_composed() {
        let ok = |name: &str| {
            personal(&form(&[("name", name), ("email", "a@example.org")]))
                .unwrap_or_else(|e| panic!("{name:?} refused: {e:?}"))["name"]
                .as_str()
                .unwrap()
                .to_string()
        };
        // "José" typed decomposed (e + U+0301) is stored as one letter.
        assert_eq!(ok("Jose\u{301} Pe\u{301}rez"), "José Pérez");
        assert_eq!(ok("José Pérez"), "José Pérez");
        // Devanagari with a virama, Thai with a tone mark, Vietnamese with
        // two marks on one letter, Persian with a zero-width non-joiner.
        assert_eq!(ok("अर्जुन शर्मा"), "अर्जुन शर्मा");
        assert_eq!(ok("ก้องภพ"), "ก้องภพ");
        assert_eq!(ok("Nguyê\u{303}n"), "Nguyễn");
        assert_eq!(ok("مهر\u{200c}آسا"), "مهر\u{200c}آسا");
        assert_eq!(ok("Zoë O’Brien-Smith Jr."), "Zoë O’Brien-Smith Jr.");
    }

    #[test]
    fn a_refused_character_is_named_as_the_user_sees_it() {
        let refused = |name: &str| {
            personal(&form(&[("name", name), ("email", "a@example.org")])).unwrap_err()["name"]
                .clone()
        };
        assert_eq!(
            refused("Ada ☺"),
            "Full name may contain letters, spaces, hyphens, apostrophes and dots, not \u{201c}☺\u{201d} (U+263A)."
        );
        assert_eq!(
            refused("\u{301}Ada"),
            "Full name has a mark that belongs on a letter, \u{201c}\u{25cc}\u{301}\u{201d} (U+0301), with no letter before it."
        );
        assert_eq!(
            refused("Ada\u{0}"),
            "Full name may contain letters, spaces, hyphens, apostrophes and dots, not U+0000."
        );
        // No message shows a Rust escape.
        for name in ["x\u{94d}\u{94d}☺", "\u{94d}", "a\u{200b}b"] {
            let m = refused(name);
            assert!(!m.contains("\\u{"), "{m}");
        }
    }

    #[test]
    fn card_checks_luhn_expiry_and_otp_and_keeps_no_number() {
        let good = form(&[
            ("card_number", "4242 4242 4242 4242"),
            ("expiry", "12/30"),
            ("holder", "Ada Lovelace"),
            ("otp", "123456"),
        ]);
        let v = card(&good, (2026, 12)).unwrap();
        assert_eq!(v["last4"], "4242");
        assert!(!v.to_string().contains("42424242"));
        assert!(!v.to_string().contains("123456"));
        let mut bad = good.clone();
        bad.insert("card_number".into(), "4242 4242 4242 4241".into());
        bad.insert("expiry".into(), "11/26".into());
        bad.insert("otp".into(), "12345".into());
        let e = card(&bad, (2026, 12)).unwrap_err();
        assert!(e["card_number"].contains("check digit"));
        assert_eq!(e["expiry"], "This card expired in 11/26.");
        assert!(e["otp"].contains("6 digits"));
    }

    #[test]
    fn messages_in_spanish_name_the_field_and_the_character() {
        let e = personal_in(&form(&[("name", "Ana ☺"), ("email", "ana")]), Lang::Es).unwrap_err();
        assert_eq!(
            e["name"],
            "Nombre completo: puede llevar letras, espacios, guiones, apóstrofos y puntos, no \u{201c}☺\u{201d} (U+263A)."
        );
        assert!(
            e["email"].starts_with("El correo lleva una @"),
            "{}",
            e["email"]
        );
        let e = card_in(&form(&[("expiry", "01/20")]), (2030, 1), Lang::Es).unwrap_err();
        assert_eq!(e["expiry"], "Esta tarjeta caducó en 01/20.");
        assert_eq!(e["card_number"], "El número de tarjeta es obligatorio.");
        let e = bank_in(&form(&[("iban", "DE89 3704 0044 0532 0130 01")]), Lang::Es).unwrap_err();
        assert!(e["iban"].contains("mal escrito"), "{}", e["iban"]);
        assert_eq!(
            plan_in(&form(&[]), Lang::Es).unwrap_err()["plan"],
            "Elige un plan."
        );
    }

    #[test]
    fn iban_mod_97() {
        assert!(check_iban("DE89370400440532013000", Lang::En).is_ok());
        assert!(check_iban("DE89370400440532013001", Lang::En)
            .unwrap_err()
            .contains("mistyped"));
        assert!(check_iban("GB82WEST12345698765432", Lang::En).is_ok());
    }

    #[test]
    fn plan_is_one_of_the_offer() {
        let e = plan(&form(&[("plan", "gold"), ("billing", "weekly")])).unwrap_err();
        assert!(e["plan"].contains("no plan \"gold\""));
        assert!(e.contains_key("billing"));
        let v = plan(&form(&[("plan", "pro"), ("billing", "yearly")])).unwrap();
        assert_eq!(v["amount_cents"], 29_000);
    }

    #[test]
    fn today_is_plausible() {
        let (y, m) = today();
        assert!(y >= 2024 && (1..=12).contains(&m));
    }
}
