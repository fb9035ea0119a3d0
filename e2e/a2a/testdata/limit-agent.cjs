// An A2A agent at its account's limit, on @a2a-js/sdk's server (JSON-RPC,
// A2A 1.0, streaming), for tai's e2e tests. The SDK is loaded from the
// directory in $TAI_A2A_JS (scripts/install-peers.sh installs it there).
// The first message of each context is refused:
//
//   limit RESET ...  the task fails "You've hit your usage limit" with
//                    resetsAt RESET in its status message's metadata
//   throttle ...     the front answers the send with HTTP 429 and
//                    Retry-After: 0, before any task
//
// Every later message of the context is answered "resumed: " and its
// text parts joined by " + ". GET /took?context=ID lists what a context
// took. It prints "listening URL" once it listens on 127.0.0.1.
'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');
const req = createRequire(path.join(process.env.TAI_A2A_JS, 'package.json'));
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = req('@a2a-js/sdk/server');
const { jsonRpcHandler, agentCardHandler, UserBuilder } = req('@a2a-js/sdk/server/express');
const { TaskState, Role } = req('@a2a-js/sdk');
const express = req('express');

const took = new Map(); // context → texts

const textPart = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const message = (ctx, text, metadata) => ({ messageId: `m-${Math.random().toString(36).slice(2)}`, contextId: ctx.contextId,
  taskId: ctx.taskId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata, extensions: [], referenceTaskIds: [] });
const status = (ctx, state, msg) => AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId,
  status: { state, message: msg, timestamp: new Date().toISOString() }, metadata: undefined });

const executor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join(' + ');
    const first = !took.has(ctx.contextId);
    if (first) took.set(ctx.contextId, []);
    took.get(ctx.contextId).push(text);
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED,
      message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    const words = text.split(/\s+/);
    if (first && words[0] === 'limit' && words.length > 1) {
      bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, message(ctx, "You've hit your usage limit.", { resetsAt: words[1] })));
      bus.finished();
      return;
    }
    bus.publish(AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true,
      artifact: { artifactId: 'answer', name: '', description: '', parts: [textPart('resumed: ' + text)], metadata: undefined, extensions: [] },
      metadata: undefined }));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED, undefined));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.finished();
  },
};

const app = express();
let base = '';
const card = async () => ({
  name: 'limited', description: 'an A2A agent at its limit', version: '1.0.0',
  supportedInterfaces: [{ url: base + '/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], securitySchemes: {}, securityRequirements: [],
  signatures: [],
});
const throttled = new Set();
// The card names the URL, known once the server listens: the routes go in then.
const srv = app.listen(0, '127.0.0.1', async () => {
  base = `http://127.0.0.1:${srv.address().port}`;
  const handler = new DefaultRequestHandler(await card(), new InMemoryTaskStore(), executor);
  app.get('/took', (rq, rs) => rs.json(took.get(rq.query.context) || []));
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: card }));
  app.use('/a2a/jsonrpc', express.json(), (rq, rs, next) => {
    const parts = rq.body?.params?.message?.parts || [];
    if (parts.length === 1 && typeof parts[0].text === 'string' && parts[0].text.startsWith('throttle') && !throttled.has(parts[0].text)) {
      throttled.add(parts[0].text);
      rs.set('Retry-After', '0').status(429).send('Too Many Requests');
      return;
    }
    next();
  }, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log('listening ' + base);
});
process.stdin.on('end', () => process.exit(0)); // the test's end closes stdin
process.stdin.resume();
