/**
 * The filter row of a list page. Filters live in the page's URL
 * (#/runs?app=...), so a filtered list can be linked and the back button
 * undoes a filter; every page reads and writes them the same way here.
 */
import { navigate, type Route } from '../router.js';

/** A text box (no `options`) or a choice among `options`; `''` means no filter. */
export interface FilterField {
  name: string;
  label: string;
  placeholder?: string;
  options?: readonly { value: string; label: string }[];
}

/** The current value of each field, from the route's query. */
export function filterValues(route: Route, fields: readonly FilterField[]): Record<string, string> {
  return Object.fromEntries(fields.map((field) => [field.name, route.params.get(field.name) ?? '']));
}

export function FilterForm({ page, route, fields }: { page: string; route: Route; fields: readonly FilterField[] }) {
  const values = filterValues(route, fields);
  const setFilter = (name: string, value: string): void => {
    const params = new URLSearchParams(route.params);
    if (value === '') params.delete(name);
    else params.set(name, value);
    const text = params.toString();
    navigate(`#/${page}${text !== '' ? `?${text}` : ''}`);
  };
  return (
    <form class="filters" onSubmit={(event) => event.preventDefault()}>
      {fields.map((field) => (
        <label>
          {field.label}
          {field.options === undefined ? (
            <input name={field.name} value={values[field.name]} onChange={(event) => setFilter(field.name, event.currentTarget.value.trim())} placeholder={field.placeholder ?? 'any'} />
          ) : (
            <select name={field.name} value={values[field.name]} onChange={(event) => setFilter(field.name, event.currentTarget.value)}>
              {field.options.map((option) => (
                <option value={option.value}>{option.label}</option>
              ))}
            </select>
          )}
        </label>
      ))}
    </form>
  );
}

/** A field offering `any` and then each of `values`. */
export function choiceField(name: string, label: string, values: readonly string[]): FilterField {
  return { name, label, options: [{ value: '', label: 'any' }, ...values.map((value) => ({ value, label: value.replace('_', ' ') }))] };
}

/** The "Started" field: a window in minutes back from now. */
export function sinceField(windows: readonly [minutes: number, label: string][]): FilterField {
  return {
    name: 'since',
    label: 'Started',
    options: [{ value: '', label: 'any time' }, ...windows.map(([minutes, label]) => ({ value: String(minutes), label }))],
  };
}
