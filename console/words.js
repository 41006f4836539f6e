// What the API says in codes, in the reader's words: statuses, failure reasons, the providers' own
// error codes, kinds of content, file sizes. An unknown code shows itself rather than nothing.
import { t, tMaybe } from "./i18n.js";

export function statusWords(status) {
  return tMaybe(`status.${status}`) || status;
}

/** A failure reason: its words and its code, e.g. "nenhum número disponível (no_number_available)". */
export function reasonWords(code) {
  if (!code) return t("common.none");
  const words = tMaybe(`reason.${code}`);
  return words ? `${words} (${code})` : code;
}

/** An incoming message's outcome (`no_downstream`, `ignored: no_sender`, `failed: downstream_error`,
 * `forwarded: placeholder (expired)`): the reason's words; nothing for one that went well
 * (`received`, `forwarded`). */
export function outcomeWords(outcome) {
  if (!outcome || outcome === "received" || outcome === "forwarded") return null;
  const placeholder = /^forwarded: placeholder \((.+)\)$/.exec(outcome);
  if (placeholder) return t("outcome.placeholder", { reason: unavailableWords(placeholder[1]) });
  const [head, reason] = outcome.split(": ");
  return reasonWords((reason || head).trim());
}

/** Why a customer's file did not reach the helpdesk, which got a placeholder instead (the media
 * capability's reasons, the helpdesk's own limit): its words and its code. */
export function unavailableWords(code) {
  const words = tMaybe(`media.unavailable.${code}`);
  return words ? `${words} (${code})` : code;
}

/** A provider's own code (Meta's 131049, WhatsApp's 463) in words; the code alone when unknown. */
export function providerCodeWords(code) {
  if (code === null || code === undefined || code === "") return null;
  return tMaybe(`providerCode.${code}`) || `${t("messages.providerCode")}: ${code}`;
}

export function contentWords(type) {
  return tMaybe(`content.${type}`) || type;
}

/** Bytes as people read them: 950 B, 12,3 KB, 4,8 MB (the reader's language's decimal mark). */
export function humanSize(bytes, language) {
  if (typeof bytes !== "number" || !Number.isFinite(bytes)) return t("common.none");
  const units = ["B", "KB", "MB", "GB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${new Intl.NumberFormat(language, { maximumFractionDigits: digits }).format(value)} ${units[unit]}`;
}
