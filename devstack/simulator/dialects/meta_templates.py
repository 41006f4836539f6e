"""The Cloud API's message templates and its customer-service window, as Meta runs them.

- `GET /{version}/{waba-id}/message_templates` (`fields`, `limit`, `after`): the business
  account's templates, `{"data": [...], "paging": {"cursors": {"before", "after"}, "next"?}}`,
  to a bearer of a number of that account (another token: code 100, subcode 33, as Graph
  answers an object it will not show). Each account starts with templates from Meta's own
  documented examples (`hello_world` and `2023_april_promo` from the message_templates
  reference's example answer; `seasonal_promotion` and `order_confirmation`, with variables and
  buttons, from Meta's template examples as david-lev/pywa keeps them).
- A `template` message is checked as Meta checks it: an unknown name or language is `132001`
  ("Template name does not exist in the translation"), one not APPROVED `132015`/`132016`
  (paused, disabled) or `132001` (pending, rejected), a body with another number of parameters
  than its placeholders `132000`. A template is sent whatever the window.
- The window: a number may send anything but a template to a user only within 24 h of the
  user's last message to it. Outside it Meta accepts the request (200, a wamid) and then posts
  the message's `failed` status with error `131047` ("Re-engagement message"); nothing reaches
  the user (`/_sim/refused` lists those sends, `/_sim/sent` does not).
- `POST /_sim/waba/{waba-id}/templates` adds or changes a template (a status change posts the
  account's `message_template_status_update` webhook, as Meta does on review).
"""

from __future__ import annotations

import copy
import hashlib
import re
import time
from typing import TYPE_CHECKING, Any

from devstack.simulator import payloads, wire
from devstack.simulator.model import SimError

if TYPE_CHECKING:
    from devstack.simulator.model import Instance
    from devstack.simulator.state import Records

WINDOW_SECONDS = 24 * 3600
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
REENGAGEMENT_DETAILS = (
    "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
)

# Meta's documented examples (see the module's docstring), as the Graph API lists them.
DOCUMENTED_TEMPLATES: list[dict[str, Any]] = [
    {
        "name": "hello_world",
        "language": "en_US",
        "status": "APPROVED",
        "category": "MARKETING",
        "id": "1192339204654487",
        "components": [
            {"type": "HEADER", "format": "TEXT", "text": "Hello World"},
            {
                "type": "BODY",
                "text": "Welcome and congratulations!! This message demonstrates your ability to send a message "
                "notification from WhatsApp Business Platform\u2019s Cloud API. Thank you for taking the time to "
                "test with us.",
            },
            {"type": "FOOTER", "text": "WhatsApp Business API Team"},
        ],
    },
    {
        "name": "2023_april_promo",
        "language": "en_US",
        "status": "APPROVED",
        "category": "MARKETING",
        "id": "920070352646140",
        "components": [
            {"type": "HEADER", "format": "TEXT", "text": "Fall Sale"},
            {
                "type": "BODY",
                "text": "Hi {{1}}, our Fall Sale is on! Use promo code {{2}} Get an extra 25% off every order "
                "above $350!",
                "example": {"body_text": [["Mark", "FALL25"]]},
            },
            {"type": "FOOTER", "text": "Not interested in any of our sales? Tap Stop Promotions"},
            {"type": "BUTTONS", "buttons": [{"type": "QUICK_REPLY", "text": "Stop promotions"}]},
        ],
    },
    {
        "name": "seasonal_promotion",
        "language": "en_US",
        "status": "APPROVED",
        "category": "MARKETING",
        "id": "564750795574598",
        "components": [
            {
                "type": "HEADER",
                "format": "TEXT",
                "text": "Our {{1}} is on!",
                "example": {"header_text": ["Summer Sale"]},
            },
            {
                "type": "BODY",
                "text": "Shop now through {{1}} and use code {{2}} to get {{3}} off of all merchandise.",
                "example": {"body_text": [["the end of August", "25OFF", "25%"]]},
            },
            {"type": "FOOTER", "text": "Use the buttons below to manage your MARKETING subscriptions"},
            {
                "type": "BUTTONS",
                "buttons": [
                    {"type": "QUICK_REPLY", "text": "Unsubscribe from Promos"},
                    {"type": "QUICK_REPLY", "text": "Unsubscribe from All"},
                ],
            },
        ],
    },
    {
        "name": "order_confirmation",
        "language": "en_US",
        "status": "APPROVED",
        "category": "UTILITY",
        "id": "1689556908129832",
        "components": [
            {"type": "HEADER", "format": "DOCUMENT", "example": {"header_handle": ["4::YX..."]}},
            {
                "type": "BODY",
                "text": "Thank you for your order, {{1}}! Your order number is {{2}}. Tap the PDF linked above to view "
                "your receipt. If you have any questions, please use the buttons below to contact support. Thank you "
                "for being a customer!",
                "example": {"body_text": [["Pablo", "860198-230332"]]},
            },
            {
                "type": "BUTTONS",
                "buttons": [
                    {"type": "PHONE_NUMBER", "text": "Call", "phone_number": "15550051310"},
                    {"type": "URL", "text": "Contact Support", "url": "https://www.luckyshrub.com/support"},
                ],
            },
        ],
    },
]
# A template not approved is refused with the code Meta gives its status.
_STATUS_CODES = {"PAUSED": (132015, "Template is Paused"), "DISABLED": (132016, "Template is Disabled")}


def templates_of(records: Records, waba_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The account's templates by (name, language), seeded with Meta's documented examples."""
    found = records.meta_templates.get(waba_id)
    if found is None:
        found = {(t["name"], t["language"]): copy.deepcopy(t) for t in DOCUMENTED_TEMPLATES}
        records.meta_templates[waba_id] = found
    return found


def page(records: Records, owner: Instance, waba_id: str, args: dict[str, str]) -> dict[str, Any]:
    """One page of the account's templates, as `GET /{waba-id}/message_templates` answers it."""
    if owner.waba_id != waba_id:
        raise payloads.meta_refused(
            400,
            100,
            f"Unsupported get request. Object with ID '{waba_id}' does not exist, cannot be loaded due to missing "
            "permissions, or does not support this operation.",
            kind="GraphMethodException",
            error_subcode=33,
        )
    templates = sorted(templates_of(records, waba_id).values(), key=lambda t: (t["name"], t["language"]))
    fields = [f for f in (args.get("fields") or "").split(",") if f] or [
        "name",
        "components",
        "language",
        "status",
        "category",
        "id",
    ]
    try:
        limit = max(1, min(int(args.get("limit") or 25), 1000))
        start = int(args.get("after") or 0)
    except ValueError:
        raise payloads.meta_refused(400, 100, "(#100) Invalid parameter") from None
    chosen = templates[start : start + limit]
    data = [{field: t[field] for field in fields if field in t} for t in chosen]
    paging: dict[str, Any] = {"cursors": {"before": str(start), "after": str(start + len(chosen))}}
    if start + limit < len(templates):
        paging["next"] = f"https://graph.facebook.com/{waba_id}/message_templates?after={start + len(chosen)}"
    return {"data": data, "paging": paging}


def check_template(records: Records, instance: Instance, template: dict[str, Any]) -> dict[str, Any]:
    """The template a `template` message names, refused as Meta refuses it."""
    name = template.get("name")
    language = (template.get("language") or {}).get("code")
    known = templates_of(records, instance.waba_id).get((str(name), str(language)))
    if known is None or known["status"] in ("PENDING", "REJECTED"):
        raise payloads.meta_refused(400, 132001, "(#132001) Template name does not exist in the translation")
    if known["status"] in _STATUS_CODES:
        code, title = _STATUS_CODES[known["status"]]
        raise payloads.meta_refused(400, code, f"(#{code}) {title}")
    body = next((c for c in known["components"] if c["type"] == "BODY"), None)
    wanted = len(dict.fromkeys(_PLACEHOLDER.findall(body.get("text", "")))) if body else 0
    given = next((c for c in template.get("components") or [] if str(c.get("type")).lower() == "body"), None)
    if len((given or {}).get("parameters") or []) != wanted:
        raise payloads.meta_refused(
            400, 132000, "(#132000) Number of parameters does not match the expected number of params"
        )
    return known


def window_open(instance: Instance, wa_id: str, now: float | None = None) -> bool:
    heard = instance.heard.get(wa_id)
    return heard is not None and (now or time.time()) - heard < WINDOW_SECONDS


def outside_window(records: Records, instance: Instance, wa_id: str, body: str) -> str:
    """A free-form send outside the user's window: accepted, never delivered, its `failed` status
    (131047) posted. Returns the wamid the answer carries."""
    message_id = wire.wamid(wa_id)
    records.refused.append({"instance": instance.id, "phone": wa_id, "id": message_id, "code": "131047", "body": body})
    assert instance.meta_phone_id is not None
    value = reengagement_failure(message_id, wa_id)
    body_bytes = payloads.meta_webhook(instance.waba_id, instance.number, instance.meta_phone_id, value)
    records.post_to_hook(instance, "statuses", body_bytes, "application/json", wanted=True)
    return message_id


def reengagement_failure(message_id: str, recipient: str) -> dict[str, Any]:
    """The `failed` status Meta posts for a free-form message outside the window."""
    status = payloads.meta_status(message_id, recipient, "failed", time.time())
    status["statuses"][0]["errors"] = [
        {
            "code": 131047,
            "title": "Re-engagement message",
            "message": "Re-engagement message",
            "error_data": {"details": REENGAGEMENT_DETAILS},
            "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
        }
    ]
    return status


def status_update_body(waba_id: str, template: dict[str, Any], reason: str | None) -> bytes:
    """The account's `message_template_status_update` webhook (pywa's recorded example's shape)."""
    value = {
        "event": template["status"],
        "message_template_id": int(template.get("id") or 0),
        "message_template_name": template["name"],
        "message_template_language": template["language"],
        "reason": reason or "NONE",
        "message_template_category": template.get("category"),
    }
    body = {
        "entry": [
            {
                "id": waba_id,
                "time": int(time.time()),
                "changes": [{"value": value, "field": "message_template_status_update"}],
            }
        ],
        "object": "whatsapp_business_account",
    }
    return wire.meta_json(body)


def set_template(records: Records, waba_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Add or change a template of the account; a new status is posted as Meta posts it (to the
    callback of a number of the account). Returns the template."""
    templates = templates_of(records, waba_id)
    key = (str(fields["name"]), str(fields["language"]))
    current = templates.get(key)
    digest = hashlib.sha256(f"{waba_id}/{key[0]}/{key[1]}".encode()).hexdigest()
    template = copy.deepcopy(current) if current else {"id": str(int(digest[:12], 16)), "components": []}
    before = template.get("status")
    for name in ("name", "language", "status", "category", "components"):
        if fields.get(name) is not None:
            template[name] = fields[name]
    template.setdefault("status", "APPROVED")
    templates[key] = template
    if template["status"] != before:
        owner = next((i for i in records.instances.values() if i.flavour == "meta" and i.waba_id == waba_id), None)
        if owner is None:
            raise SimError(404, "waba_not_found", "no Meta number of this account")
        body = status_update_body(waba_id, template, fields.get("reason"))
        records.post_to_hook(owner, "message_template_status_update", body, "application/json", wanted=True)
    return template
