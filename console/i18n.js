// All text of the console comes from the dictionaries in i18n/; pt-BR is the default.
import ptBR from "./i18n/pt-BR.js";
import en from "./i18n/en.js";

const DICTIONARIES = { "pt-BR": ptBR, en };
const STORAGE_KEY = "switchboard.lang";
let current = DICTIONARIES[localStorage.getItem(STORAGE_KEY)] ? localStorage.getItem(STORAGE_KEY) : browserLanguage();

/** The first time (nothing chosen yet), the browser's own preference: Portuguese of any region
 * reads the pt-BR console, any other language the English one; no preference at all, pt-BR. */
function browserLanguage() {
  const preferred = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language]).filter(Boolean);
  if (!preferred.length) return "pt-BR";
  return /^pt\b/i.test(preferred[0]) ? "pt-BR" : "en";
}

export const languages = Object.keys(DICTIONARIES);

export function lang() {
  return current;
}

export function setLang(code) {
  if (!DICTIONARIES[code]) return;
  current = code;
  localStorage.setItem(STORAGE_KEY, code);
  document.documentElement.lang = code;
}

/** t("pool.moved", {number: "+55…", position: 2}); a missing key shows itself, never blank. */
export function t(key, params = {}) {
  const text = DICTIONARIES[current][key] ?? ptBR[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in params ? String(params[name]) : `{${name}}`));
}

/** t() for a key that may be missing (a stage or code from the API): null when unknown. */
export function tMaybe(key, params) {
  return key in DICTIONARIES[current] || key in ptBR ? t(key, params) : null;
}

export function formatDate(value) {
  if (!value) return t("common.none");
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return new Intl.DateTimeFormat(current, { dateStyle: "short", timeStyle: "medium" }).format(date);
}

/** Brazilian numbers as people write them (+55 11 99999-0001); any other as +digits. */
export function formatPhone(digits) {
  if (!digits) return t("common.none");
  const value = String(digits);
  const br = /^55(\d{2})(\d{4,5})(\d{4})$/.exec(value);
  return br ? `+55 ${br[1]} ${br[2]}-${br[3]}` : `+${value}`;
}

document.documentElement.lang = current;
