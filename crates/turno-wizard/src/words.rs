//! What the pages say, in English and Spanish.
//!
//! The language comes from the `turno_lang` cookie (the switch on every
//! page sets it), else from the browser's `Accept-Language`, else English.
//! Every sentence a user reads is here, written for a person: no state
//! names, no status codes, no idempotency keys outside a "details"
//! disclosure. The fault panel is the demo operator's and stays English
//! (marked `lang="en"`). Field messages come from [`crate::validate`], in
//! the page's language too.

use crate::steps::{Page, Stage};

/// A language of the pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// English.
    En,
    /// Spanish.
    Es,
}

/// The languages offered, as (code, the language's own name).
pub const LANGS: &[(Lang, &str, &str)] =
    &[(Lang::En, "en", "English"), (Lang::Es, "es", "Español")];

impl Lang {
    /// The BCP 47 code (`en`, `es`).
    pub fn code(self) -> &'static str {
        LANGS.iter().find(|l| l.0 == self).map_or("en", |l| l.1)
    }

    /// The language of a code, if offered.
    pub fn from_code(code: &str) -> Option<Lang> {
        LANGS.iter().find(|l| l.1 == code).map(|l| l.0)
    }

    /// The first offered language of an `Accept-Language` header, by its
    /// weights; a regional tag counts as its language (`es-ES`: `es`).
    pub fn from_accept(header: &str) -> Option<Lang> {
        accept_language::parse(header).iter().find_map(|tag| {
            let primary = tag.split('-').next().unwrap_or("");
            Lang::from_code(&primary.to_ascii_lowercase())
        })
    }

    /// The words of this language.
    pub fn words(self) -> &'static Words {
        match self {
            Lang::En => &EN,
            Lang::Es => &ES,
        }
    }
}

/// Every fixed sentence of the pages; `{}` marks where a value goes
/// ([`fill`]).
pub struct Words {
    /// The site's name, in the header and every title.
    pub site: &'static str,
    /// The progress list's label.
    pub progress: &'static str,
    /// The language switch's label.
    pub language: &'static str,
    pub name: &'static str,
    pub email: &'static str,
    pub plan_legend: &'static str,
    pub per_month: &'static str,
    pub billing: &'static str,
    pub monthly: &'static str,
    pub yearly: &'static str,
    pub card_number: &'static str,
    pub expiry: &'static str,
    pub holder: &'static str,
    pub otp: &'static str,
    pub iban: &'static str,
    pub account_holder: &'static str,
    pub next: &'static str,
    pub save_and_review: &'static str,
    pub back: &'static str,
    pub to_review: &'static str,
    pub use_bank: &'static str,
    pub use_card: &'static str,
    pub confirm: &'static str,
    pub change_payment: &'static str,
    pub change_plan: &'static str,
    pub change_personal: &'static str,
    pub retry: &'static str,
    pub cancel: &'static str,
    pub recheck: &'static str,
    /// The card page: what is never kept.
    pub card_never_kept: &'static str,
    /// The card page, back from review: type the number again.
    pub card_again: &'static str,
    /// The card page after a refused form: why the number is empty.
    pub card_cleared: &'static str,
    /// The bank page, back from review: type the IBAN again.
    pub iban_again: &'static str,
    /// Editing from review: where "save" goes.
    pub editing: &'static str,
    /// `{}`: the amount.
    pub confirm_charges: &'static str,
    pub last_change: &'static str,
    /// `{}`: the attempt's number.
    pub sending: &'static str,
    /// `{}`: the gateway's reason.
    pub failed: &'static str,
    pub abandoned: &'static str,
    pub uncertain: &'static str,
    pub unresolvable: &'static str,
    /// `{}`: the amount.
    pub paid: &'static str,
    pub receipt: &'static str,
    pub next_steps: &'static str,
    pub next_steps_text: &'static str,
    pub start_over: &'static str,
    pub details: &'static str,
    pub payment_reference: &'static str,
    /// The gateway's own words about the last failure (in "details").
    pub gateway_said: &'static str,
    pub attempts: &'static str,
    pub sum_name: &'static str,
    pub sum_email: &'static str,
    pub sum_plan: &'static str,
    pub sum_payment: &'static str,
    /// `{}`: the last four.
    pub card_ending: &'static str,
    /// `{}`: the last four.
    pub bank_ending: &'static str,
    pub none: &'static str,
    pub draft: &'static str,
    pub draft_text: &'static str,
    pub forget: &'static str,
    pub workings_show: &'static str,
    pub workings_hide: &'static str,
    pub statechart: &'static str,
    pub fields_need_attention: &'static str,
    pub expired_new: &'static str,
    /// `{}`: the step asked for; the reason follows.
    pub not_open: &'static str,
    pub not_open_sent: &'static str,
    pub not_open_ahead: &'static str,
    pub not_open_done: &'static str,
    pub stale_title: &'static str,
    /// `{}`: the step the form was for, `{}`: the current one.
    pub stale: &'static str,
    pub refused_title: &'static str,
    pub other_session: &'static str,
    pub no_session: &'static str,
    pub gone: &'static str,
    pub no_action: &'static str,
    pub bad_link: &'static str,
    pub not_found: &'static str,
    pub restarting: &'static str,
    pub store_failed: &'static str,
    pub not_answering: &'static str,
    pub forget_wait_title: &'static str,
    pub forget_wait: &'static str,
    pub forgotten_title: &'static str,
    pub forgotten: &'static str,
    pub your_step: &'static str,
    pub go_to_signup: &'static str,
}

/// `template` with each `{}` replaced by the next of `values`.
pub fn fill(template: &str, values: &[&str]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut parts = template.split("{}");
    out.push_str(parts.next().unwrap_or(""));
    for (i, part) in parts.enumerate() {
        out.push_str(values.get(i).copied().unwrap_or(""));
        out.push_str(part);
    }
    out
}

impl Lang {
    /// A page's title, as its heading and in the window's title.
    pub fn title(self, page: Page) -> &'static str {
        let en = self == Lang::En;
        match (page, en) {
            (Page::Personal, true) => "About you",
            (Page::Personal, false) => "Sobre ti",
            (Page::Plan, true) => "Choose a plan",
            (Page::Plan, false) => "Elige un plan",
            (Page::Card, true) => "Pay by card",
            (Page::Card, false) => "Pago con tarjeta",
            (Page::Bank, true) => "Pay from a bank account",
            (Page::Bank, false) => "Pago desde una cuenta bancaria",
            (Page::Review, true) => "Check and pay",
            (Page::Review, false) => "Revisa y paga",
            (Page::Sending, true) => "Sending your payment",
            (Page::Sending, false) => "Enviando tu pago",
            (Page::Failed, true) => "The payment did not go through",
            (Page::Failed, false) => "El pago no se ha realizado",
            (Page::Abandoned, true) => "Payment cancelled",
            (Page::Abandoned, false) => "Pago cancelado",
            (Page::Uncertain, true) => "Checking your payment",
            (Page::Uncertain, false) => "Comprobando tu pago",
            (Page::Unresolvable, true) => "We could not confirm your payment",
            (Page::Unresolvable, false) => "No hemos podido confirmar tu pago",
            (Page::Completed, true) => "You are signed up",
            (Page::Completed, false) => "Ya estás registrado",
        }
    }

    /// A stage's name in the progress list.
    pub fn stage(self, stage: Stage) -> &'static str {
        let en = self == Lang::En;
        match (stage, en) {
            (Stage::You, true) => "You",
            (Stage::You, false) => "Tú",
            (Stage::Plan, _) => "Plan",
            (Stage::Payment, true) => "Payment",
            (Stage::Payment, false) => "Pago",
            (Stage::Review, true) => "Review",
            (Stage::Review, false) => "Revisión",
            (Stage::Done, true) => "Done",
            (Stage::Done, false) => "Listo",
        }
    }
}

/// English.
pub static EN: Words = Words {
    site: "Sign up for turno",
    progress: "Your progress",
    language: "Language",
    name: "Full name",
    email: "Email",
    plan_legend: "Plan",
    per_month: "a month",
    billing: "Billing",
    monthly: "Monthly",
    yearly: "Yearly (you pay for 10 months)",
    card_number: "Card number",
    expiry: "Expiry date (MM/YY)",
    holder: "Name on the card",
    otp: "One-time code from your bank (6 digits)",
    iban: "IBAN",
    account_holder: "Account holder",
    next: "Continue",
    save_and_review: "Save and go back to the review",
    back: "Back",
    to_review: "Continue to the review",
    use_bank: "Pay from a bank account instead",
    use_card: "Pay by card instead",
    confirm: "Confirm and pay",
    change_payment: "Change payment",
    change_plan: "Change plan",
    change_personal: "Change your details",
    retry: "Try again",
    cancel: "Cancel the payment",
    recheck: "Check again",
    card_never_kept: "For your safety, the card number and the one-time code are never stored, not in this browser and not on our server.",
    card_again: "Your other card details are filled in. Please type the card number and a new one-time code again: they are never stored.",
    card_cleared: "The card number and the one-time code were cleared because they are never stored, not even after a mistake. Please type them again.",
    iban_again: "Please type your IBAN again: it is not kept in the form.",
    editing: "When you save, you go straight back to the review; nothing else changes.",
    confirm_charges: "When you confirm, we charge {}.",
    last_change: "This is the last moment to change anything.",
    sending: "Please wait a moment: we are sending your payment. This page updates by itself; there is no need to click again.",
    failed: "Your bank or card provider refused the payment ({}). Nothing was charged. You can try again or cancel.",
    abandoned: "You cancelled the payment. Nothing was charged.",
    uncertain: "We have not heard back whether your payment went through. We are asking the payment service now; nothing is sent twice. This page updates by itself.",
    unresolvable: "The payment service cannot tell us yet whether you were charged. Check your card or bank statement before you do anything else; we will not try to charge you again by ourselves.",
    paid: "Your payment of {} went through.",
    receipt: "Receipt number",
    next_steps: "What happens next",
    next_steps_text: "Keep the receipt number for your records. Your plan is active from today. This demo has no account pages, so there is nothing more to do here.",
    start_over: "Sign up someone else",
    details: "Details for support",
    payment_reference: "Payment reference",
    gateway_said: "The payment service said",
    attempts: "Attempts",
    sum_name: "Name",
    sum_email: "Email",
    sum_plan: "Plan",
    sum_payment: "Payment",
    card_ending: "card ending in {}",
    bank_ending: "bank account ending in {}",
    none: "none yet",
    draft: "Your draft",
    draft_text: "Your answers are saved as you go. To continue on another device, open this link there:",
    forget: "Forget me",
    workings_show: "Show how the demo works",
    workings_hide: "Hide how the demo works",
    statechart: "Statechart",
    fields_need_attention: "Some fields need your attention.",
    expired_new: "Your earlier signup has expired or was deleted, so this is a new one.",
    not_open: "You went to “{}”, but {}",
    not_open_sent: "your payment has already been sent, so the earlier steps can no longer change. Here is where your signup is now.",
    not_open_ahead: "that step is not open yet. Please finish this one first.",
    not_open_done: "your signup is finished. Here is its summary.",
    stale_title: "This page is out of date",
    stale: "That form was for “{}”, but your signup has moved on to “{}” (perhaps in another tab). Nothing was changed.",
    refused_title: "We could not do that",
    other_session: "That form belongs to another signup, so it was not used.",
    no_session: "We could not find your signup. Please start from the first page.",
    gone: "This signup has expired or was deleted.",
    no_action: "That button does not belong on this page, so nothing was changed.",
    bad_link: "This signup link is not valid: it was mistyped or changed, it has expired, or its signup was deleted.",
    not_found: "There is no such page.",
    restarting: "The signup service is restarting. This page tries again by itself in a moment.",
    store_failed: "We could not reach your saved signup just now. Please try again in a moment.",
    not_answering: "The signup service is not answering (restarting?). Trying again…",
    forget_wait_title: "Not deleted yet",
    forget_wait: "Your payment is still being settled. If we deleted your signup now, you could not find out whether you were charged. You can delete it as soon as this page says the payment went through, failed, or could not be confirmed.",
    forgotten_title: "Your signup is deleted",
    forgotten: "Your signup, its saved answers and its link are deleted from our server, and this browser’s copy is cleared.",
    your_step: "Your signup is at “{}”.",
    go_to_signup: "Go to your signup",
};

/// Spanish.
pub static ES: Words = Words {
    site: "Regístrate en turno",
    progress: "Tu progreso",
    language: "Idioma",
    name: "Nombre completo",
    email: "Correo electrónico",
    plan_legend: "Plan",
    per_month: "al mes",
    billing: "Facturación",
    monthly: "Mensual",
    yearly: "Anual (pagas 10 meses)",
    card_number: "Número de tarjeta",
    expiry: "Fecha de caducidad (MM/AA)",
    holder: "Nombre en la tarjeta",
    otp: "Código de un solo uso de tu banco (6 cifras)",
    iban: "IBAN",
    account_holder: "Titular de la cuenta",
    next: "Continuar",
    save_and_review: "Guardar y volver a la revisión",
    back: "Atrás",
    to_review: "Continuar a la revisión",
    use_bank: "Pagar desde una cuenta bancaria",
    use_card: "Pagar con tarjeta",
    confirm: "Confirmar y pagar",
    change_payment: "Cambiar el pago",
    change_plan: "Cambiar el plan",
    change_personal: "Cambiar tus datos",
    retry: "Intentarlo de nuevo",
    cancel: "Cancelar el pago",
    recheck: "Volver a comprobar",
    card_never_kept: "Por tu seguridad, el número de tarjeta y el código de un solo uso no se guardan nunca, ni en este navegador ni en nuestro servidor.",
    card_again: "Los demás datos de la tarjeta ya están rellenados. Vuelve a escribir el número de tarjeta y un código nuevo: no se guardan nunca.",
    card_cleared: "Hemos borrado el número de tarjeta y el código de un solo uso porque no se guardan nunca, ni siquiera tras un error. Vuelve a escribirlos.",
    iban_again: "Vuelve a escribir tu IBAN: el formulario no lo conserva.",
    editing: "Al guardar, vuelves directamente a la revisión; lo demás no cambia.",
    confirm_charges: "Al confirmar, cobramos {}.",
    last_change: "Es el último momento para cambiar algo.",
    sending: "Espera un momento: estamos enviando tu pago. Esta página se actualiza sola; no hace falta volver a pulsar.",
    failed: "Tu banco o el emisor de la tarjeta ha rechazado el pago ({}). No se ha cobrado nada. Puedes intentarlo de nuevo o cancelar.",
    abandoned: "Has cancelado el pago. No se ha cobrado nada.",
    uncertain: "Aún no sabemos si tu pago se ha realizado. Lo estamos preguntando al servicio de pagos; nada se envía dos veces. Esta página se actualiza sola.",
    unresolvable: "El servicio de pagos todavía no puede decirnos si se te ha cobrado. Revisa el extracto de tu tarjeta o de tu banco antes de hacer nada más. No volveremos a cobrarte por nuestra cuenta.",
    paid: "Tu pago de {} se ha realizado.",
    receipt: "Número de recibo",
    next_steps: "Y ahora",
    next_steps_text: "Guarda el número de recibo. Tu plan está activo desde hoy. Esta demo no tiene páginas de cuenta, así que no queda nada más por hacer aquí.",
    start_over: "Registrar a otra persona",
    details: "Detalles para soporte",
    payment_reference: "Referencia del pago",
    gateway_said: "El servicio de pagos dijo",
    attempts: "Intentos",
    sum_name: "Nombre",
    sum_email: "Correo",
    sum_plan: "Plan",
    sum_payment: "Pago",
    card_ending: "tarjeta terminada en {}",
    bank_ending: "cuenta bancaria terminada en {}",
    none: "todavía ninguno",
    draft: "Tu borrador",
    draft_text: "Tus respuestas se guardan sobre la marcha. Para seguir en otro dispositivo, abre allí este enlace:",
    forget: "Olvídame",
    workings_show: "Mostrar cómo funciona la demo",
    workings_hide: "Ocultar cómo funciona la demo",
    statechart: "Diagrama de estados",
    fields_need_attention: "Algunos campos necesitan tu atención.",
    expired_new: "Tu registro anterior ha caducado o se ha borrado, así que este es uno nuevo.",
    not_open: "Has ido a «{}», pero {}",
    not_open_sent: "tu pago ya se ha enviado, así que los pasos anteriores ya no pueden cambiar. Aquí está tu registro ahora.",
    not_open_ahead: "ese paso todavía no está abierto. Termina primero este.",
    not_open_done: "tu registro ha terminado. Aquí tienes el resumen.",
    stale_title: "Esta página está desactualizada",
    stale: "Ese formulario era para «{}», pero tu registro ya está en «{}» (quizá en otra pestaña). No se ha cambiado nada.",
    refused_title: "No hemos podido hacerlo",
    other_session: "Ese formulario pertenece a otro registro, así que no se ha usado.",
    no_session: "No encontramos tu registro. Empieza desde la primera página.",
    gone: "Este registro ha caducado o se ha borrado.",
    no_action: "Ese botón no pertenece a esta página, así que no se ha cambiado nada.",
    bad_link: "Este enlace de registro no es válido: se escribió mal o se modificó, ha caducado, o su registro se ha borrado.",
    not_found: "Esa página no existe.",
    restarting: "El servicio de registro se está reiniciando. Esta página vuelve a intentarlo sola en un momento.",
    store_failed: "Ahora mismo no podemos acceder a tu registro guardado. Inténtalo de nuevo en un momento.",
    not_answering: "El servicio de registro no responde (¿se está reiniciando?). Reintentando…",
    forget_wait_title: "Todavía no se ha borrado",
    forget_wait: "Tu pago aún se está resolviendo. Si borráramos tu registro ahora, no podrías saber si se te ha cobrado. Podrás borrarlo en cuanto esta página diga que el pago se ha realizado, ha fallado o no se ha podido confirmar.",
    forgotten_title: "Tu registro se ha borrado",
    forgotten: "Tu registro, sus respuestas guardadas y su enlace se han borrado de nuestro servidor, y la copia de este navegador se ha eliminado.",
    your_step: "Tu registro está en «{}».",
    go_to_signup: "Ir a tu registro",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browsers_languages_pick_by_weight_and_region_counts_as_language() {
        assert_eq!(Lang::from_accept("es-ES,es;q=0.9,en;q=0.8"), Some(Lang::Es));
        assert_eq!(
            Lang::from_accept("de-DE, en-GB;q=0.7, es;q=0.9"),
            Some(Lang::Es)
        );
        assert_eq!(Lang::from_accept("fr, de"), None);
        assert_eq!(Lang::from_accept("EN-us"), Some(Lang::En));
    }

    #[test]
    fn fill_puts_values_in_order() {
        assert_eq!(fill("a {} b {}.", &["1", "2"]), "a 1 b 2.");
    }
}
