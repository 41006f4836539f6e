// The banner every admin screen shows while a number cannot send as it should: a number with no
// connected instance, or an instance paused by its health, each with what to do and a link to
// its instance. It reads the API once signed in, then again on the live frames that say a
// connection or a health changed (a health frame re-reads only the instance it names).
import { api } from "./api.js";
import { h, clear, debounce } from "./dom.js";
import { t, formatDate, formatPhone } from "./i18n.js";

const PAUSED = new Set(["paused", "paused_for_new_contacts"]);

export class Banner {
  constructor() {
    this.element = h("section", { class: "banner", "aria-label": t("banner.label"), "aria-live": "polite", hidden: true });
    this.active = false;
    this.numbers = [];
    this.instances = [];
    this.healths = new Map();
    this.generation = 0;
    this.reread = debounce(() => this.refresh(), 400);
  }

  /** Only an admin reads the instances; an attendant's calls panel says a connection's state itself. */
  start(isAdmin) {
    this.active = isAdmin;
    this.generation += 1;
    if (isAdmin) this.refresh();
    else this.render();
  }

  stop() {
    this.active = false;
    this.generation += 1;
    this.numbers = [];
    this.instances = [];
    this.healths.clear();
    this.render();
  }

  async refresh() {
    if (!this.active) return;
    const generation = this.generation;
    try {
      const [numbers, instances] = await Promise.all([api.numbers(), api.instances()]);
      const healths = await Promise.all(instances.map((instance) => api.health(instance.name).catch(() => null)));
      if (generation !== this.generation) return; // signed out (or in again) meanwhile
      this.numbers = numbers;
      this.instances = instances;
      this.healths = new Map(instances.map((instance, index) => [instance.name, healths[index]]));
      this.render();
    } catch {
      // The banner is a courtesy: the screens say what failed to load.
    }
  }

  async onFrame(frame) {
    if (!this.active) return;
    if (frame.type === "instance.connection.changed") this.reread();
    if (frame.type === "number.health.changed") {
      const name = frame.detail && frame.detail.instance;
      if (!name || !this.healths.has(name)) {
        this.reread();
        return;
      }
      const generation = this.generation;
      const health = await api.health(name).catch(() => null);
      if (generation !== this.generation) return;
      this.healths.set(name, health);
      this.render();
    }
  }

  /** Re-render in the current language (after a language switch). */
  render() {
    const notices = this.active ? this.notices() : [];
    this.element.setAttribute("aria-label", t("banner.label"));
    this.element.hidden = notices.length === 0;
    document.body.dataset.numbersAlert = notices.length ? "yes" : "no";
    clear(this.element, notices.length ? h("ul", {}, notices) : null);
  }

  notices() {
    const items = [];
    for (const number of this.numbers) {
      const own = this.instances.filter((instance) => instance.numberId === number.id);
      const phone = `${formatPhone(number.number)} (${number.displayName})`;
      if (!number.connected && own.length) {
        const first = own[0].name;
        items.push(
          h(
            "li",
            { dataset: { notice: "disconnected", number: number.id } },
            h("strong", {}, t("banner.disconnected", { number: phone })),
            " ",
            t("banner.disconnectedWhat"),
            " ",
            h("a", { href: `#/instances/${encodeURIComponent(first)}` }, t("banner.reconnect", { instance: first })),
          ),
        );
      }
      for (const instance of own) {
        const health = this.healths.get(instance.name);
        if (!health || !PAUSED.has(health.state)) continue;
        items.push(
          h(
            "li",
            { dataset: { notice: health.state, instance: instance.name } },
            h("strong", {}, t(`banner.${health.state}`, { number: phone, instance: instance.name })),
            " ",
            health.pausedUntil ? t("banner.until", { date: formatDate(health.pausedUntil) }) : "",
            " ",
            t(`banner.${health.state}.what`),
            " ",
            h("a", { href: `#/instances/${encodeURIComponent(instance.name)}` }, t("banner.see", { instance: instance.name })),
          ),
        );
      }
    }
    return items;
  }
}
