/**
 * An app's own user interface, as MCP Apps (SEP-1865) has it: `ui://` resources
 * (HTML documents a JIT component of the app answers, each with the Content
 * Security Policy and permissions it declares) and the app's tools, each
 * answered by a JIT component, which may link a resource (`resourceUri`) for
 * hosts to render their results. The console is such a host: it renders a
 * resource in a sandboxed, double-nested iframe on an origin of its own, with
 * the resource's CSP, and lets the view call the app's tools whose visibility
 * includes `app` (docs/console.md).
 */
import { Type, type Static } from '@sinclair/typebox';

const COMPONENT_ID_PATTERN = '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';
const ComponentId = (description: string) => Type.String({ pattern: COMPONENT_ID_PATTERN, minLength: 1, maxLength: 63, description });

/** `ui://` and a path of plain characters: it is shown, compared and put in URLs. */
export const UI_URI_PATTERN = '^ui://[A-Za-z0-9][A-Za-z0-9._~/-]{0,200}$';
const UiUri = (description: string) => Type.String({ pattern: UI_URI_PATTERN, maxLength: 206, description });

/**
 * An origin a view may reach: scheme, host (a leading `*.` for subdomains) and
 * port. Nothing that could end a CSP source or add a keyword (quotes, `;`, spaces).
 */
export const CSP_ORIGIN_PATTERN = '^(https?|wss?)://(\\*\\.)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?$';
const Origins = (description: string) =>
  Type.Optional(Type.Array(Type.String({ pattern: CSP_ORIGIN_PATTERN, maxLength: 253 }), { maxItems: 32, description }));

export const UiCspSpec = Type.Object(
  {
    connectDomains: Origins('Origins the view may fetch, XHR or open WebSockets to (connect-src); none: no network.'),
    resourceDomains: Origins('Origins of scripts, styles, images, fonts and media (script-src, style-src, img-src, font-src, media-src).'),
    frameDomains: Origins('Origins the view may frame (frame-src); none: no nested frames.'),
    baseUriDomains: Origins('Origins a <base> may name (base-uri); none: no <base>.'),
  },
  { additionalProperties: false, description: 'The Content Security Policy the view asks for; the host enforces it and never loosens it.' },
);
export type UiCspSpec = Static<typeof UiCspSpec>;

export const UiResourceSpec = Type.Object(
  {
    uri: UiUri('The resource, e.g. ui://helpdesk/ticket.'),
    name: Type.String({ minLength: 1, maxLength: 128, description: 'Shown to people.' }),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    component: ComponentId('The JIT component that answers the HTML document of the view (text/html).'),
    csp: Type.Optional(UiCspSpec),
    permissions: Type.Optional(
      Type.Object(
        {
          camera: Type.Optional(Type.Boolean()),
          microphone: Type.Optional(Type.Boolean()),
          geolocation: Type.Optional(Type.Boolean()),
          clipboardWrite: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false, description: 'Browser features the view asks for; a host may grant none (the console grants none).' },
      ),
    ),
    prefersBorder: Type.Optional(Type.Boolean({ description: 'Whether the host draws a border and background around the view.' })),
  },
  { additionalProperties: false },
);
export type UiResourceSpec = Static<typeof UiResourceSpec>;

export const UiToolSpec = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'The tool name, unique in the app.' }),
    description: Type.String({ maxLength: 1024 }),
    component: ComponentId('The JIT component that answers a call: its trigger payload is the arguments, its generic result the structured content.'),
    inputSchema: Type.Optional(
      Type.Object({}, { additionalProperties: true, 'x-kubernetes-preserve-unknown-fields': true, description: 'JSON Schema of the arguments.' }),
    ),
    resourceUri: Type.Optional(UiUri('The ui:// resource of the app that renders the tool\'s results.')),
    visibility: Type.Optional(
      Type.Array(Type.Union([Type.Literal('model'), Type.Literal('app')]), {
        minItems: 1,
        maxItems: 2,
        description: 'Who may call it: model (an agent, the console\'s operator) and app (the app\'s own views). Default: both.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UiToolSpec = Static<typeof UiToolSpec>;

export const UiSpec = Type.Object(
  {
    resources: Type.Array(UiResourceSpec, { default: [], maxItems: 64 }),
    tools: Type.Array(UiToolSpec, { default: [], maxItems: 64 }),
  },
  { additionalProperties: false, description: "The app's own views (MCP Apps ui:// resources) and the tools that feed them." },
);
export type UiSpec = Static<typeof UiSpec>;
