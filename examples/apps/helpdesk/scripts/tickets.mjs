// A JIT step of the helpdesk workflow: its input is what the workflow's inputs_map gives it.
export function makeTicket(event) {
  const { text } = event.triggerDetails.payload;
  return { id: `T-${Date.now().toString(36).toUpperCase()}`, title: String(text).slice(0, 60), priority: /crash|data loss/i.test(text) ? 'high' : 'normal' };
}

// The tools of the helpdesk's ticket view (spec.ui): a trigger payload is the tool's arguments.
export function showTicket(event) {
  const { text = '', id } = event.triggerDetails.payload ?? {};
  const ticket = makeTicket({ triggerDetails: { payload: { text: String(text) } } });
  return { ...ticket, ...(typeof id === 'string' ? { id } : {}), status: 'open' };
}

// Only the view calls it (visibility: [app]): the button on the ticket.
export function escalateTicket(event) {
  const { id, title = '' } = event.triggerDetails.payload ?? {};
  return { id: String(id), title: String(title).slice(0, 60), priority: 'urgent', status: 'escalated', escalatedAt: new Date().toISOString() };
}
