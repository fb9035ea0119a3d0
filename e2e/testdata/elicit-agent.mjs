#!/usr/bin/env node
// An ACP agent written with the TypeScript SDK (1.9.0) that asks its client
// for a form and a URL, then says what it got. TAI_ACP_SDK is the SDK's
// dist/acp.js.
import { Readable, Writable } from "node:stream";

const acp = await import(process.env.TAI_ACP_SDK);

let clientCaps = {};

class ElicitAgent {
  constructor(conn) {
    this.conn = conn;
  }
  async initialize(params) {
    clientCaps = params.clientCapabilities ?? {};
    return { protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false } };
  }
  async newSession() {
    return { sessionId: "ts-elicit-" + process.pid };
  }
  async authenticate() {
    return {};
  }
  async setSessionMode() {
    return {};
  }
  async cancel() {}
  async say(sessionId, text) {
    await this.conn.sessionUpdate({ sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
  }
  async prompt(params) {
    const sessionId = params.sessionId;
    if (!clientCaps.elicitation?.form || !clientCaps.elicitation?.url) {
      await this.say(sessionId, "no elicitation offered");
      return { stopReason: "end_turn" };
    }
    const form = await this.conn.createElicitation({
      mode: "form",
      sessionId,
      message: "Pick a deployment target",
      requestedSchema: {
        type: "object",
        properties: {
          region: { type: "string", title: "Region", enum: ["eu", "us"] },
          replicas: { type: "integer", minimum: 1, maximum: 9, default: 2 },
          api_key: { type: "string", title: "API key" },
        },
        required: ["region"],
      },
    });
    const got = form.action === "accept" ? JSON.stringify({ region: form.content?.region, replicas: form.content?.replicas, key_len: (form.content?.api_key ?? "").length }) : form.action;
    await this.say(sessionId, "form: " + got + ". ");
    const url = await this.conn.createElicitation({
      mode: "url",
      sessionId,
      message: "Authorise the deploy",
      elicitationId: "ts-1",
      url: "https://auth.example.com/deploy",
    });
    if (url.action === "accept") {
      await this.conn.completeElicitation({ elicitationId: "ts-1" });
    }
    await this.say(sessionId, "url: " + url.action + ".");
    return { stopReason: "end_turn" };
  }
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
new acp.AgentSideConnection((conn) => new ElicitAgent(conn), stream);
