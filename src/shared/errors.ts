/**
 * The one registry of uhlp error codes. Every failure the core, the CLI or a runner
 * reports carries one of these codes; `docs/errors.md` documents each, and a test
 * keeps the two in step. Codes are stable: clients may switch on them.
 */
export const ERROR_CATALOG = {
  // Ingress and routing
  UHLP_BAD_REQUEST: { status: 400, summary: 'The request cannot be read (bad URL encoding, bad header, bad chunk, a method node:http does not take).' },
  UHLP_APP_NOT_FOUND: { status: 404, summary: 'No application matches the request host or path prefix.' },
  UHLP_ROUTE_NOT_FOUND: { status: 404, summary: 'The application has no route for this method and path.' },
  UHLP_BODY_TOO_LARGE: { status: 413, summary: "The request body is over the ingress body limit (or its chunk extensions are over 16 KiB); a request to /mcp over the MCP endpoint's own limit; a message payload over 1 MiB of JSON." },
  UHLP_JSON_TOO_DEEP: { status: 400, summary: "JSON a turn or a tool call is given nests deeper than 512 levels: a body that says it is JSON, a queue or event payload, an MCP request's arguments." },
  UHLP_REQUEST_TIMEOUT: { status: 408, summary: 'The request did not arrive whole within the request timeout (a client sending too slowly).' },
  UHLP_EXPECTATION_FAILED: { status: 417, summary: 'The request has an Expect header other than 100-continue.' },
  UHLP_REQUEST_HEAD_TOO_LARGE: { status: 431, summary: 'The request line and headers (or chunked trailers) are over 16 KiB, or there are more than 1000 header lines.' },
  UHLP_TRANSFER_CODING_NOT_SUPPORTED: { status: 501, summary: 'The request body has a transfer coding other than chunked.' },
  UHLP_HTTP_VERSION_NOT_SUPPORTED: { status: 505, summary: 'The request is not HTTP/1.0 or HTTP/1.1.' },
  UHLP_HANDLER_NOT_SUPPORTED: { status: 501, summary: 'The component handler type is not supported by this core yet.' },

  // Sandboxes
  UHLP_SANDBOX_BAD_RESPONSE: { status: 502, summary: 'The sandbox answered something that is not a valid /execute response.' },
  UHLP_SANDBOX_ERROR: { status: 502, summary: 'The sandbox runner answered with an HTTP error of its own.' },
  UHLP_SANDBOX_DIED: { status: 502, summary: 'The sandbox died or dropped the connection while executing.' },
  UHLP_SANDBOX_RESPONSE_TOO_LARGE: { status: 502, summary: 'The sandbox answer is over UHLP_MAX_SANDBOX_RESPONSE_BYTES; the core stopped reading it and destroyed the sandbox.' },
  UHLP_POOL_EXHAUSTED: { status: 503, summary: 'Every sandbox of the pool stayed busy past the acquire wait.' },
  UHLP_POOL_QUEUE_FULL: { status: 503, summary: 'The pool wait queue is full; the request was not queued.' },
  UHLP_SANDBOX_UNAVAILABLE: { status: 503, summary: 'No sandbox could be started for the pool.' },
  UHLP_SHUTTING_DOWN: { status: 503, summary: 'The core is stopping and takes no new requests.' },
  UHLP_SANDBOX_TIMEOUT: { status: 504, summary: 'The component ran past its timeoutMs; the sandbox was destroyed.' },
  UHLP_IMAGE_BUILD_FAILED: { status: 500, summary: 'A sandbox image could not be built (missing build output, ldd or strip failed, the engine refused the build).' },

  // Answers built by runners inside the sandbox
  UHLP_EXECUTE_BAD_REQUEST: {
    status: 500,
    summary:
      "A runner was sent a task it cannot run: the task in the /execute context is not one for this runner, or breaks its schema. (A body that breaks the /execute contract itself the runner refuses with the contract's HTTP 400 under this code; the core answers that as UHLP_SANDBOX_ERROR.)",
  },
  UHLP_RUNNER_BUSY: { status: 429, summary: 'A runner received a request while it was executing another one.' },
  UHLP_SCRIPT_NOT_FOUND: { status: 500, summary: "The component's script does not exist in the definitions revision." },
  UHLP_FUNCTION_NOT_FOUND: { status: 500, summary: 'The script does not export the named function.' },
  UHLP_SCRIPT_LOAD_FAILED: { status: 500, summary: 'The script could not be imported (syntax error, failing top-level code).' },
  UHLP_SCRIPT_EXCEPTION: { status: 500, summary: 'The script threw an error without a string code.' },
  UHLP_SCRIPT_BAD_RESULT: { status: 500, summary: 'The script returned a value that cannot be answered (bad statusCode, not JSON).' },
  UHLP_PROMPT_TEMPLATE_INVALID: { status: 500, summary: 'A prompt template of an LLM component or workflow is refused by the template sandbox: it does not parse, leaves the template grammar (a name that is no identifier, an unknown filter or test, a call of anything but a macro or an allowed global), or did at render time what templates may not; details name the file, the line, the column and the cause.' },
  UHLP_PROMPT_TEMPLATE_ERROR: { status: 500, summary: 'A prompt template of an LLM component or workflow cannot be read, or fails to render (a missing include, an error while rendering); details name the file, the line, the column and the cause.' },
  UHLP_LLM_OUTPUT_SCHEMA_INVALID: { status: 500, summary: 'The output schema of an LLM component cannot be read, is not JSON, or does not compile.' },
  UHLP_LLM_OUTPUT_INVALID: { status: 502, summary: "The model's answer failed the component's output schema (or is no HTTP response) after maxAttempts answers; details hold the errors." },
  UHLP_LLM_TOOL_LOOP_LIMIT: { status: 502, summary: "The model asked for more tool calls than the component's maxToolCalls." },

  // Runtime state (sessions, kv, leases, idempotency, rate limits)
  UHLP_STATE_UNAVAILABLE: { status: 503, summary: 'The runtime state store (Redis) cannot be reached; the request failed fast.' },
  UHLP_STATE_INPUT_INVALID: { status: 400, summary: 'A runtime state call has a bad argument (empty key, TTL not a positive integer).' },
  UHLP_FLOW_WAIT_TIMEOUT: { status: 429, summary: "The event waited at its route's (component's) flow gate past maxWaitMs without a slot; Retry-After says when to retry." },
  UHLP_RATE_LIMITED: { status: 429, summary: "The app is over spec.limits.requestsPerSecond; Retry-After says when to retry." },
  UHLP_IDEMPOTENCY_IN_FLIGHT: { status: 409, summary: 'A request with the same Idempotency-Key is still running.' },
  UHLP_IDEMPOTENCY_KEY_REUSED: { status: 422, summary: 'The Idempotency-Key was already used for a different request.' },
  UHLP_SESSION_NOT_FOUND: { status: 404, summary: 'The session does not exist or has expired.' },
  UHLP_SESSION_OUTPUT_NOT_FOUND: { status: 404, summary: 'The session has no published output at that path.' },
  UHLP_SESSION_ID_INVALID: { status: 400, summary: 'A session id is not of the form SES-<timestamp>-<random>.' },

  // Ledger
  UHLP_LEDGER_INTEGRITY: { status: 500, summary: 'A ledger entry does not verify (tampered, reordered, or missing its predecessor).' },
  UHLP_LEDGER_KEY_REQUIRED: { status: 500, summary: 'A ledger is sealed with a ledger key (HMAC) and this core or command has no key to extend or check it.' },
  UHLP_LEDGER_UNAVAILABLE: { status: 503, summary: "With ledger durability sync or fsync, the turn's entries could not be written, so its answer is withheld (the turn ran; the log says why)." },

  // Endpoint spine (Unix-socket JSON lines between the core and endpoint hosts)
  UHLP_SPINE_BAD_MESSAGE: { status: 400, summary: 'A spine line is not JSON, or not a known message with its required fields.' },
  UHLP_SPINE_FORBIDDEN: { status: 403, summary: "A spine registration of a protected route (the std-body host's), or an exit, without the core's secret." },
  UHLP_ENDPOINT_UNAVAILABLE: { status: 503, summary: 'No connected host serves the endpoint, or its host disconnected during the invocation.' },
  UHLP_ENDPOINT_TIMEOUT: { status: 504, summary: 'The endpoint host did not answer the invocation within its timeout.' },

  // Web capability (guarded fetch)
  UHLP_WEB_INVALID_URL: { status: 400, summary: 'The URL to fetch cannot be parsed, or a redirect Location is not a URL.' },
  UHLP_WEB_UNSUPPORTED_SCHEME: { status: 400, summary: 'The URL (or a redirect target) is not http or https.' },
  UHLP_WEB_HOST_NOT_ALLOWED: { status: 403, summary: "The host (or a redirect target's host) is not in the web capability's allowHosts." },
  UHLP_WEB_METHOD_NOT_ALLOWED: { status: 403, summary: "The HTTP method is not in the web capability's methods." },
  UHLP_WEB_ADDRESS_NOT_ALLOWED: { status: 403, summary: 'The host resolves to a loopback, private, link-local, metadata or other non-public address that allowPrivate does not list.' },
  UHLP_SECRET_UNAVAILABLE: { status: 503, summary: "A credential of capabilities.web.inject matches the request, or core.secrets.read names a secret, that is not (or no longer) among the app's own; nothing was sent." },
  UHLP_WEB_TOO_MANY_REDIRECTS: { status: 502, summary: 'The server redirected more times than the fetch allows.' },
  UHLP_WEB_NETWORK_ERROR: { status: 502, summary: 'The fetch failed in transport: DNS, connection, TLS or a reset.' },
  UHLP_WEB_TIMEOUT: { status: 504, summary: 'The fetch, redirects and body included, ran past its timeout.' },

  // LLM providers
  UHLP_LLM_INVALID_REQUEST: { status: 400, summary: 'An LLM generate call has neither messages nor prompt, or a bad message, tool, response schema, maxTokens or temperature; details name the field.' },
  UHLP_LLM_BUDGET_EXCEEDED: { status: 429, summary: "The app has spent capabilities.llm.tokensPerDay for this UTC day; details.retryAfterSeconds says when the day ends." },
  UHLP_LLM_REQUEST_REJECTED: { status: 422, summary: 'The LLM provider refused the request as invalid (4xx other than 401, 403, 429).' },
  UHLP_LLM_RATE_LIMITED: { status: 429, summary: 'The LLM provider kept answering 429 through every retry.' },
  UHLP_LLM_ENDPOINT_INVALID: { status: 400, summary: "An app's spec.llm.endpoint.url is not a plain http(s) URL (credentials, a query or a fragment in it); the app is refused." },
  UHLP_LLM_ENDPOINT_NOT_ALLOWED: { status: 403, summary: "An app's model endpoint is, or resolves to, a loopback, private, link-local or metadata address the operator did not allow (UHLP_LLM_ALLOW_PRIVATE); nothing was sent." },
  UHLP_LLM_AUTH_FAILED: { status: 502, summary: 'The LLM provider refused the configured API key (401 or 403).' },
  UHLP_LLM_UPSTREAM_ERROR: { status: 502, summary: 'The LLM provider kept failing with 5xx, or could not be reached, through every retry.' },
  UHLP_LLM_BAD_RESPONSE: { status: 502, summary: 'The LLM provider answered something that is not a chat completion (not JSON, no message, a broken or cut stream, a tool call without a name, over the size limit).' },
  UHLP_LLM_TIMEOUT: { status: 504, summary: 'The LLM provider did not answer within the timeout.' },
  UHLP_LLM_SCRIPT_INVALID: { status: 500, summary: "The scripted provider's answers file cannot be read or breaks its format." },
  UHLP_LLM_NO_SCRIPTED_ANSWER: { status: 500, summary: 'No entry of the scripted answers file matches the prompt and the file has no default.' },

  // Core MCP server and app capabilities
  UHLP_MCP_UNAUTHORIZED: { status: 401, summary: 'The MCP request has no bearer token, or the token is unknown, revoked or expired.' },
  UHLP_MCP_TASK_NOT_FOUND: { status: 404, summary: 'No task of the caller\'s app has that id (an unknown id, an expired run, or another app\'s run).' },
  UHLP_MCP_INVALID_ARGUMENTS: { status: 400, summary: "A tool call's arguments break the tool's input schema; details name the field." },
  UHLP_MCP_TOOL_NOT_FOUND: { status: 404, summary: 'No MCP tool has this name.' },
  UHLP_CAPABILITY_DENIED: { status: 403, summary: "The app's capabilities do not allow the call; details name the capability and the rule." },
  UHLP_DECLARED_OUTPUTS_INVALID: { status: 400, summary: 'The X-UHLP-Declared-Outputs header is not a list of {"path", "role"} with tmp/ or output/ paths.' },
  UHLP_WRITE_SURFACE_MISMATCH: { status: 502, summary: "The turn wrote files it did not declare, or not the ones it declared; nothing was published, and details list both." },
  UHLP_WRITE_SURFACE_UNREPORTED: { status: 502, summary: "The core cannot walk the sandbox's work tree (a pod) and its runner did not report what the turn wrote (a runner image older than the core); the turn failed and the sandbox was deleted." },
  UHLP_STATE_WRITE_NOT_AVAILABLE: { status: 501, summary: 'Definition state cannot be written here: this core serves apps from Kubernetes, not a definitions repository.' },
  UHLP_MCP_CALL_FAILED: { status: 502, summary: 'A script\'s tool call failed outside the tool: the MCP endpoint was unreachable or answered no valid result.' },
  UHLP_MCP_SERVER_UNAVAILABLE: { status: 503, summary: 'A federated MCP server cannot be reached: its package or pool is not ready, its sandbox could not start, or the remote server refused the connection.' },
  UHLP_MCP_SERVER_TIMEOUT: { status: 504, summary: "A federated MCP server did not answer a call within its timeoutMs; a stdio server's sandbox was destroyed." },
  UHLP_MCP_SERVER_OUTPUT_TOO_LARGE: { status: 502, summary: "A federated MCP server's answer is over its maxOutputBytes; nothing of it was kept." },
  UHLP_MCP_SERVER_PROTOCOL_ERROR: { status: 502, summary: 'A federated MCP server answered something that is not a valid MCP result (no result object, a tool result of the wrong shape).' },
  UHLP_MCP_SERVER_CRASHED: { status: 502, summary: 'A federated stdio MCP server died during the call; its pool starts another.' },
  UHLP_MCP_SERVER_ERROR: { status: 502, summary: 'A federated MCP server answered the call with an error: a JSON-RPC error (details carry its code) or a tool result marked isError (details carry its content).' },
  UHLP_MCP_PACKAGE_FAILED: { status: 500, summary: 'The npm package of a stdio MCP server could not be installed (npm failed, the package has no such bin).' },
  UHLP_MCP_PACKAGE_INTEGRITY: { status: 500, summary: 'The npm package of a stdio MCP server does not have the integrity the AppDefinition (or the registry) names; it was not installed.' },
  UHLP_DEV_MODE_ONLY: { status: 403, summary: 'The endpoint exists only in a core started by `uhlp dev`.' },

  // cs-js functions (published bundles run in V8 isolates)
  UHLP_FN_BUNDLE_INVALID: { status: 400, summary: 'A function bundle is not the canonical tar of exactly function.js and manifest.json, a file is not UTF-8 or is over its size limit.' },
  UHLP_FN_MANIFEST_INVALID: { status: 422, summary: 'manifest.json is not JSON or breaks cs.function.script.v1 (checked at publish and again at execution); details name the field.' },
  UHLP_FN_REF_INVALID: { status: 400, summary: 'A function name (namespace/function), version, alias or sha256 is malformed.' },
  UHLP_FN_NOT_FOUND: { status: 404, summary: 'No such function, version, alias or bundle (sha256) in the tenant.' },
  UHLP_FN_BUNDLE_INTEGRITY: { status: 502, summary: 'A stored or fetched bundle does not hash to the sha256 it was asked for; it was not run.' },
  UHLP_FN_ACTIVATION_NOT_FOUND: { status: 404, summary: 'No logs are kept for this activation id (unknown, or expired).' },
  UHLP_CS_DENIED: { status: 403, summary: "A `cs` host call is outside the manifest's capabilities (kv prefixes or ops, codeq publishTopics, http allowHosts); details name the capability and the rule." },
  UHLP_CS_INVALID_ARGUMENT: { status: 400, summary: 'A `cs` host call has a bad argument (a key that is not a string, a value that is not JSON, a bad URL or topic).' },
  UHLP_CS_TIMEOUT: { status: 504, summary: "The activation ran past the manifest's timeoutMs (deadline_ms); its isolate was cancelled." },
  UHLP_CS_MEMORY_LIMIT: { status: 500, summary: "The activation's isolate went over the manifest's memoryMb; it was terminated." },
  UHLP_CS_CONCURRENCY_LIMIT: { status: 429, summary: "The function version already runs maxConcurrency activations on this replica and none ended before the activation's deadline." },
  UHLP_CS_RUNTIME_UNAVAILABLE: { status: 500, summary: 'The isolate engine (isolated-vm) cannot be loaded in this runner: wrong runner kind, or the native addon is missing.' },
  UHLP_CODEQ_UNAVAILABLE: { status: 503, summary: 'cs.codeq.publish was called but this core has no queue publisher connected.' },

  // Delivery sources: queues, cron, callbacks, internal triggers, async invocations
  UHLP_SOURCE_ROUTE_NOT_FOUND: { status: 404, summary: "The app has no queue, callback or trigger route of that name (publishing, creating a callback URL, or a callback whose route is gone)." },
  UHLP_SOURCE_UNAUTHORIZED: { status: 401, summary: "A queue endpoint request has no bearer token, or one that is not a valid, unexpired publish (or admin) token for that app and queue." },
  UHLP_CALLBACK_INVALID: { status: 403, summary: "The callback token is malformed or not signed by this installation's sources key; nothing ran." },
  UHLP_CALLBACK_EXPIRED: { status: 410, summary: "The callback URL is past its expiry (the route's ttlSeconds); nothing ran." },
  UHLP_CALLBACK_USED: { status: 409, summary: "The callback URL was used already: callback URLs are single-use; nothing ran." },
  UHLP_TRIGGER_DEPTH_EXCEEDED: { status: 508, summary: "core.trigger.emit from a turn that is already 8 internal events deep: a loop between trigger routes is cut here." },
  UHLP_INVOCATION_NOT_FOUND: { status: 404, summary: "No async invocation has this id, or its result is past its TTL." },
  // Workflows (the llm-orchestrator's workflow runs, their records and the core's run routes)
  UHLP_WORKFLOW_INVALID: { status: 500, summary: "A workflow file cannot be read at the run's revision or breaks the workflow schema; details name the file and the problems." },
  UHLP_WORKFLOW_PREFLIGHT_FAILED: { status: 422, summary: "A required pre-flight constraint of the workflow (or of a node) failed; the message is the constraint's error_message, details name the variable and operator." },
  UHLP_WORKFLOW_TIMEOUT: { status: 504, summary: "The workflow run ran past its policy.timeout_seconds (or the pool's timeoutMs); the run is marked timed_out." },
  UHLP_WORKFLOW_EVALUATION_FAILED: { status: 502, summary: "An evaluator node's target failed the judge more than its max_retries times; details hold the last score and critique." },
  UHLP_WORKFLOW_REJECTED: { status: 409, summary: 'An approver rejected the run at an approval node that has no reject_route.' },
  UHLP_WORKFLOW_RUN_NOT_FOUND: { status: 404, summary: 'No workflow run has this id (or it has expired).' },
  UHLP_WORKFLOW_RUN_NOT_PAUSED: { status: 409, summary: 'The run is not paused at an approval node, so there is nothing to resume.' },
  UHLP_WORKFLOW_RUN_ENDED: { status: 409, summary: 'The run has ended already (completed, failed, timed out or cancelled): there is nothing to cancel.' },
  UHLP_WORKFLOW_SESSION_BUSY: { status: 409, summary: "A run of the request's session is active (running or paused) and the workflow component's doubleTexting is reject (or an enqueued request waited past the run's time); details name the active run." },
  UHLP_WORKFLOW_SESSION_QUEUE_FULL: { status: 429, summary: "The workflow component's doubleTexting is enqueue and as many requests as a session queues wait already for its active run to end." },
  UHLP_WORKFLOW_CANCELLED: { status: 409, summary: "The run was cancelled (by an operator or a client holding its id) before it ended; details say who asked and when." },
  UHLP_WORKFLOW_REPLAY_INVALID: { status: 400, summary: "A replay or fork request is not {\"fromStep\": N, \"currentRevision\"?, and for a fork \"set\" (a JSON merge patch of the blackboard) or \"blackboard\"}; details name the field." },
  UHLP_WORKFLOW_STEP_OUT_OF_RANGE: { status: 422, summary: "A replay or fork names a step the run's trace does not hold (before its first kept step or past its last); details give the range." },
  UHLP_WORKFLOW_CHECKPOINT_UNAVAILABLE: { status: 409, summary: "The state before that step was not kept whole (it rode in one checkpoint with the step before it, was over 16 KiB, or was dropped for the run's bounds), so no replay or fork starts there; details list the steps that can." },
  UHLP_WORKFLOW_FORK_STATE_INVALID: { status: 422, summary: "A fork's edited blackboard is not a JSON object, or breaks the workflow's state.schema; details hold the errors. No run was made." },
  UHLP_WORKFLOW_DECISION_INVALID: { status: 400, summary: 'A resume body is not {"approved": true|false, "comment"?, "by"?}; details name the field.' },
  UHLP_WORKFLOW_RUN_REQUIRED: { status: 403, summary: 'A workflow tool (core.workflow.*, core.component.invoke) was called without the token of the execution that runs the workflow.' },
  UHLP_WORKFLOW_RUN_CONFLICT: { status: 409, summary: 'The run was changed meanwhile (resumed elsewhere, finished, or taken over by another execution); the checkpoint was not applied.' },
  UHLP_WORKFLOW_STATE_TOO_LARGE: { status: 500, summary: 'A checkpoint would make the run record larger than UHLP_RUN_MAX_BYTES; the run failed.' },
  UHLP_WORKFLOW_STATE_INVALID: { status: 500, summary: "After a node, the blackboard breaks the workflow's state.schema; details hold the errors." },
  UHLP_WORKFLOW_INTERRUPTED: { status: 503, summary: 'The run was running when its core stopped and its persistence is memory, so it was not resumed.' },
  UHLP_TOOL_APPROVAL_REQUIRED: { status: 403, summary: 'The app marks the tool risk_level: critical; only a workflow run whose policy allows it, or whose approval node granted it, may call it.' },
  // Optimization oracle (generated code for LLM components, `uhlp optimize`)
  UHLP_ORACLE_DECLINED: { status: 502, summary: 'Generated code declined the input (ctx.fallback()) and no llm fallback answers it (the component has none, or the oracle is off: UHLP_ORACLE=off).' },
  UHLP_ORACLE_PROMOTION_REFUSED: {
    status: 409,
    summary: 'A promotion or revert cannot be committed: the app comes from Kubernetes (its spec is not in a definitions repository), or app.yaml at HEAD no longer holds the component as it was judged.',
  },
  UHLP_ORACLE_NOT_FOUND: { status: 404, summary: 'The oracle is off, or watches no such app or component (not loaded, or not optimized).' },
  UHLP_ORACLE_NOTHING_TO_DO: { status: 409, summary: "The optimize command does not apply at the component's stage (no passing candidate to promote, nothing promoted to roll back)." },
  UHLP_ORACLE_FORBIDDEN: { status: 403, summary: 'The oracle endpoints answer loopback clients only (use a port-forward to reach a core in a cluster).' },

  // Who may reach a route (src/core/route-audience.ts)
  UHLP_HOST_NOT_ALLOWED: {
    status: 421,
    summary: 'An operator route was asked under a Host that is not a loopback address, localhost, or a name in UHLP_OPERATOR_HOSTS (a DNS-rebinding page, or a name the operator did not configure).',
  },
  UHLP_NOT_ON_THIS_LISTENER: { status: 404, summary: "The route exists, but for another audience: operator routes are served on the operator listener only, apps' routes on the app listener only." },

  // The console (/_uhlp/console)
  UHLP_CONSOLE_UNAUTHORIZED: { status: 401, summary: 'A console request from beyond loopback carries no console token, or one the core does not know.' },
  UHLP_CONSOLE_FORBIDDEN: {
    status: 403,
    summary: 'The console answers loopback clients only (no console token is configured), the token\'s role is read-only and the request is an action, or the request did not come from the console\'s own page.',
  },
  UHLP_CONSOLE_VIEW_REFUSED: { status: 403, summary: "An app view's request that the MCP Apps rules refuse: a tool of another app, a tool whose visibility leaves out \"app\", a resource that is not a ui:// resource of the app." },
  UHLP_CONSOLE_NOT_BUILT: { status: 503, summary: "The console's assets are not in the build (run npm run build)." },

  // Definitions and configuration (reported in logs, /readyz and CLI exit codes)
  UHLP_DEFINITION_INVALID: { status: 422, summary: 'An AppDefinition file breaks the schema or references something missing.' },
  UHLP_DEFINITIONS_UNREADABLE: {
    status: 500,
    summary: 'The definitions directory does not exist, is not a directory, holds no apps/ directory (a plain directory is not made a Git repository then), or is a Git repository without a commit.',
  },
  UHLP_GIT_SOURCE_INVALID: {
    status: 422,
    summary: 'spec.source.git names a URL other than https://, ssh:// or scp-like (a local path, file://, http://, a <transport>:: helper, a leading "-"), or a ref or path that is not plain data.',
  },
  UHLP_GIT_SOURCE_ADDRESS_NOT_ALLOWED: {
    status: 403,
    summary: 'The host of an app\'s Git source resolves to a loopback, private, link-local, metadata or other non-public address that UHLP_GIT_ALLOW_PRIVATE does not list.',
  },
  UHLP_DEFINITION_PATH_REFUSED: { status: 400, summary: 'A definition path is absolute, leaves the app directory, or goes through a symlink.' },
  UHLP_DEFINITION_FILE_NOT_FOUND: { status: 404, summary: 'The file does not exist in the app directory at that revision.' },
  UHLP_DEFINITION_REVISION_NOT_FOUND: { status: 404, summary: 'The revision does not name a commit of the definitions repository.' },
  UHLP_DEFINITION_BASE_MISMATCH: { status: 409, summary: 'The state diff was made against a commit that is no longer HEAD.' },
  UHLP_DEFINITION_DIFF_INVALID: { status: 400, summary: 'The state diff is malformed, does not apply, or has a bad author or message.' },
  UHLP_CONFIG_INVALID: {
    status: 500,
    summary: 'A flag or environment variable has a bad value, or names what cannot be had (a port in use, an address not of this machine, a remote that cannot be pulled, a missing or malformed file); the command exits 64 and the core does not start.',
  },
  UHLP_USAGE: { status: 400, summary: 'A command line the uhlp command does not take: an unknown command or flag (with the nearest known one), a missing or extra argument; it exits 64 with its usage.' },
  UHLP_INTERNAL: { status: 500, summary: 'An unexpected failure inside the core; the log has the details.' },
} as const satisfies Record<string, { status: number; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

/** True when `code` is a code of the registry (a code that came over the wire may be any string). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CATALOG, code);
}

/** The HTTP status of `code`: the only place a status of a uhlp error comes from. */
export function errorStatus(code: ErrorCode): number {
  return ERROR_CATALOG[code].status;
}

/**
 * Base of every uhlp error: a stable code, the HTTP status the registry gives it,
 * and safe details. A code with a class of its own (runner-errors.ts,
 * workflow-errors.ts) is thrown as that class, which names the code once.
 */
export class UhlpError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly statusCode: number;
  readonly details: unknown;

  constructor(code: C, message: string, details?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UhlpError';
    this.code = code;
    this.statusCode = errorStatus(code);
    this.details = details;
  }

  /** The status under the name the /execute contract's error data and a run's error use. */
  get status(): number {
    return this.statusCode;
  }
}

/** An unexpected failure; the log (not the client) gets what went wrong. */
export class InternalError extends UhlpError<'UHLP_INTERNAL'> {
  override readonly name = 'InternalError';

  constructor(message = 'an unexpected failure', details?: unknown) {
    super('UHLP_INTERNAL', message, details);
  }
}

export function isUhlpError(error: unknown): error is UhlpError {
  return error instanceof UhlpError;
}

/** The JSON body of every error the core answers. Never carries a stack trace. */
export interface ErrorBody {
  code: string;
  message: string;
  requestId: string;
  details?: unknown;
}

export function errorBody(error: UhlpError, requestId: string): ErrorBody {
  const body: ErrorBody = { code: error.code, message: error.message, requestId };
  if (error.details !== undefined) body.details = error.details;
  return body;
}
