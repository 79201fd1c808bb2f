# The shop's receipt, in Python (a pool with runner: python): the same event and context as
# the JavaScript components, a dict back as the answer, an exception with a `code` as the
# app's own error. Money is counted in Decimal, from the standard library.
import json
from decimal import ROUND_HALF_UP, Decimal


class UnknownItem(Exception):
    code = "UNKNOWN_ITEM"
    status = 422

    def __init__(self, item):
        super().__init__(f'no price for "{item}"')
        self.details = {"item": item}


def receipt(event, ctx):
    try:
        items = json.loads(event["httpDetails"]["body"] or "{}").get("items", {})
    except ValueError:
        return {"statusCode": 400, "body": {"code": "BAD_JSON", "message": "the body must be JSON"}}
    prices = ctx.configuration["prices"]
    vat = Decimal(str(ctx.configuration["vatPercent"])) / 100
    lines = []
    for item, count in sorted(items.items()):
        if item not in prices:
            raise UnknownItem(item)
        amount = (Decimal(str(prices[item])) * count).quantize(Decimal("0.01"))
        lines.append({"item": item, "count": count, "amount": str(amount)})
    net = sum((Decimal(line["amount"]) for line in lines), Decimal("0"))
    tax = (net * vat).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return {"lines": lines, "net": str(net), "vat": str(tax), "total": str(net + tax), "currency": ctx.configuration["currency"]}
