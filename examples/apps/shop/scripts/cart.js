// generic and error results: a plain return value becomes JSON; an error with a
// string `code` becomes the app's own error, with the status it asks for.
function readCart(event) {
  try {
    return JSON.parse(event.httpDetails.body || '{}');
  } catch {
    throw Object.assign(new Error('the body must be JSON'), { code: 'BAD_JSON', status: 400 });
  }
}

export function quote(event, ctx) {
  const { items = {} } = readCart(event);
  const prices = ctx.configuration.prices;
  let total = 0;
  for (const [item, count] of Object.entries(items)) {
    if (!(item in prices)) {
      throw Object.assign(new Error(`no price for "${item}"`), { code: 'UNKNOWN_ITEM', details: { item } });
    }
    total += prices[item] * count;
  }
  return { items, total: Math.round(total * 100) / 100, currency: ctx.configuration.currency };
}

export function checkout(event) {
  const { total = 0 } = readCart(event);
  if (total <= 0) {
    throw Object.assign(new Error('nothing to pay for'), { code: 'PAYMENT_REQUIRED', status: 402, details: { total } });
  }
  return { status: 'accepted', total };
}
