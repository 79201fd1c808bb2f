import { describe, expect, it } from 'vitest';
import { compileRoutePattern, matchRoutePattern, PathDecodeError, RoutePatternError } from './route-pattern.js';
import { RouteTable } from './route-table.js';

describe('matchRoutePattern', () => {
  const cases: Array<[pattern: string, path: string, expected: Record<string, string> | undefined]> = [
    ['/', '/', {}],
    ['/', '/a', undefined],
    ['/greet', '/greet', {}],
    ['/greet', '/greet/', {}],
    ['/greet', '/greeting', undefined],
    ['/greet/:name', '/greet/ada', { name: 'ada' }],
    ['/greet/:name', '/greet/', undefined],
    ['/greet/:name', '/greet', undefined],
    ['/greet/:name', '/greet/ada/more', undefined],
    ['/greet/:name', '/greet/a%20b', { name: 'a b' }],
    ['/greet/:name', '/greet/a%2Fb', { name: 'a/b' }],
    ['/greet/:name', '/greet/%C3%A9', { name: 'é' }],
    ['/users/:id/orders/:order', '/users/7/orders/x9', { id: '7', order: 'x9' }],
    ['/files/*', '/files', { '*': '' }],
    ['/files/*', '/files/a/b%20c', { '*': 'a/b c' }],
    ['/files/:dir/*', '/files/img/x.png', { dir: 'img', '*': 'x.png' }],
    ['/Case', '/case', undefined],
  ];
  it.each(cases)('%s against %s', (pattern, path, expected) => {
    expect(matchRoutePattern(compileRoutePattern(pattern), path)).toEqual(expected);
  });

  it('refuses a parameter that is not valid percent-encoding', () => {
    expect(() => matchRoutePattern(compileRoutePattern('/x/:a'), '/x/%E0%A4%A')).toThrow(PathDecodeError);
  });
});

describe('compileRoutePattern', () => {
  const bad: Array<[string, RegExp]> = [
    ['greet', /must start with/],
    ['/a/*/b', /last segment/],
    ['/a/:1x', /invalid parameter name/],
    ['/a/:x/:x', /repeats the parameter/],
    ['/a//b', /empty segment/],
    ['/a?b', /must not contain/],
    ['/l/{code}', /segment "\{code\}": write ":code" for a parameter/],
    ['/files/{id}.json', /segment "\{id\}\.json": parameters are written ":name"/],
    ['/l/{}', /parameters are written ":name"/],
    ['/l/code}', /has "\{" or "\}"/],
  ];
  it.each(bad)('rejects %s', (pattern, message) => {
    expect(() => compileRoutePattern(pattern)).toThrow(RoutePatternError);
    expect(() => compileRoutePattern(pattern)).toThrow(message);
  });
});

describe('RouteTable', () => {
  const table = new RouteTable([
    { http: { method: 'GET', path: '/items/:id' }, component: 'by-id' },
    { http: { method: 'GET', path: '/items/new' }, component: 'new-form' },
    { http: { method: 'GET', path: '/items/*' }, component: 'catch-all' },
    { http: { method: 'POST', path: '/items' }, component: 'create' },
    { http: { method: 'GET', path: '/:section/new' }, component: 'section-new' },
  ]);
  const cases: Array<[method: string, path: string, component: string | undefined, params?: Record<string, string>]> = [
    ['GET', '/items/new', 'new-form', {}],
    ['GET', '/items/42', 'by-id', { id: '42' }],
    ['GET', '/items/42/parts', 'catch-all', { '*': '42/parts' }],
    ['POST', '/items', 'create', {}],
    ['POST', '/items/', 'create', {}],
    ['GET', '/items', 'catch-all', { '*': '' }],
    ['DELETE', '/items/42', undefined],
    ['GET', '/books/new', 'section-new', { section: 'books' }],
    ['GET', '/nothing', undefined],
  ];
  it.each(cases)('%s %s -> %s', (method, path, component, params) => {
    const match = table.match(method, path);
    expect(match?.route.componentId).toBe(component);
    if (params) expect(match?.pathParameters).toEqual(params);
  });
});
