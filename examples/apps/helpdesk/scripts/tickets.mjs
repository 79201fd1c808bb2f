// A JIT step of the helpdesk workflow: its input is what the workflow's inputs_map gives it.
export function makeTicket(event) {
  const { text } = event.triggerDetails.payload;
  return { id: `T-${Date.now().toString(36).toUpperCase()}`, title: String(text).slice(0, 60), priority: /crash|data loss/i.test(text) ? 'high' : 'normal' };
}
