// The LibreChat side of `go run ./bench compare` (bench/compare.go): LibreChat's
// agent engine, @librechat/agents, loaded as LibreChat loads it (CommonJS,
// `require` of the package's dist/cjs entry), running the benchmark's
// scenarios against the same fake model and MCP server as Relay.
//
//   node agents.cjs MODEL_BASE_URL MCP_URL
//
// Once its MCP client is connected it prints {"ready": true, ...}. Then each
// line on stdin is a batch to run, {"graph": "one" | "handoff", "runs": N,
// "at_once": C, "want": TEXT, "profile": PATH}: N runs, C at a time, each
// answer checked against TEXT. For each batch it prints one line,
// {"walls_us": [...], "cpu_us": ..., "rss_kib": ..., "failures": ...,
// "failure": ...}. It exits when stdin closes. The protocol is the one of the
// Go children (bench/compare_child.go).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const inspector = require('node:inspector/promises');
const {
  Run,
  Providers,
  Constants,
  GraphEvents,
  ModelEndHandler,
  ToolEndHandler,
  createTokenCounter,
  createContentAggregator,
} = require('@librechat/agents');
const { tool } = require('@librechat/agents/langchain/tools');
const { HumanMessage } = require('@librechat/agents/langchain/messages');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

// The MCP tool's name as the model sees it: the same on both sides, so that
// both send the model the same tool (bench/compare.go, relayConfig).
const toolName = 'get-sum__mcp__bench';
// LibreChat's context budget for a model it has no size for; Relay's is
// derived from the same fallback (docs/config.md, "Context window").
const maxContextTokens = 18000;
const question = 'What is 2+3?';

async function main() {
  const [modelURL, mcpURL] = process.argv.slice(2);
  if (!modelURL || !mcpURL) {
    throw new Error('usage: node agents.cjs MODEL_BASE_URL MCP_URL');
  }
  // One connection to the MCP server for the process, shared by every run,
  // as LibreChat keeps one for a server configured for the whole app.
  const mcp = new Client({ name: 'relay-bench', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(mcpURL)));
  const { tools } = await mcp.listTools();
  const getSum = tools.find((t) => t.name === 'get-sum');
  if (!getSum) {
    throw new Error(`the MCP server at ${mcpURL} has no get-sum tool`);
  }
  const tokenCounter = await createTokenCounter();
  // The script is run from the directory it was installed in, beside its
  // node_modules.
  const agentsVersion = JSON.parse(
    fs.readFileSync(path.join(__dirname, 'node_modules', '@librechat', 'agents', 'package.json'), 'utf8'),
  ).version;

  // mcpTool is the MCP tool as a LangChain tool, made for each run as
  // LibreChat loads an agent's tools for each request: its schema is the
  // server's, and a call is a tools/call on the shared connection whose text
  // parts are the result.
  const mcpTool = () =>
    tool(
      async (args) => {
        const res = await mcp.callTool({ name: getSum.name, arguments: args });
        const text = (res.content ?? [])
          .filter((c) => c.type === 'text')
          .map((c) => c.text)
          .join('\n');
        if (res.isError) {
          throw new Error(text);
        }
        return [text, undefined];
      },
      {
        name: toolName,
        description: getSum.description,
        schema: getSum.inputSchema,
        responseFormat: Constants.CONTENT_AND_ARTIFACT,
      },
    );

  // The model: the OpenAI provider with its base URL pointed at the fake
  // model, streaming with usage, and no smoothing delay between streamed
  // pieces (its default is 25 ms; Relay paces nothing).
  const clientOptions = () => ({
    model: 'bench-model',
    apiKey: 'sk-bench',
    streaming: true,
    streamUsage: true,
    configuration: { baseURL: modelURL },
    _lc_stream_delay: 0,
  });
  const agentInput = (agentId, name, instructions, agentTools) => ({
    agentId,
    name,
    provider: Providers.OPENAI,
    clientOptions: clientOptions(),
    instructions,
    tools: agentTools,
    maxContextTokens,
  });
  // The agents of the scenarios; their instructions are what the fake
  // model's fixtures match (bench/compare.go, fixtures).
  const graphs = {
    one: () => ({
      type: 'standard',
      agents: [agentInput('calc', 'Calculator', 'ROLE-CALC. Add numbers with the get-sum tool.', [mcpTool()])],
    }),
    handoff: () => ({
      type: 'multi-agent',
      agents: [
        agentInput('front-desk', 'Front Desk', 'ROLE-FRONT-DESK. Route questions.', []),
        agentInput('specialist', 'Specialist', 'ROLE-SPECIALIST. Add numbers with the get-sum tool.', [mcpTool()]),
      ],
      edges: [{ from: 'front-desk', to: 'specialist', edgeType: 'handoff' }],
    }),
  };

  // oneRun runs one conversation's first message and returns the answer's
  // text: a Run per request, its events aggregated into content parts and
  // its usage collected, as a LibreChat server does before it sends them on.
  const oneRun = async (graph) => {
    const runId = crypto.randomUUID();
    const { contentParts, aggregateContent } = createContentAggregator();
    const collectedUsage = [];
    const aggregate = { handle: (event, data) => aggregateContent({ event, data }) };
    const customHandlers = {
      [GraphEvents.CHAT_MODEL_END]: new ModelEndHandler(collectedUsage),
      [GraphEvents.TOOL_END]: new ToolEndHandler(),
      [GraphEvents.ON_RUN_STEP]: aggregate,
      [GraphEvents.ON_RUN_STEP_DELTA]: aggregate,
      [GraphEvents.ON_RUN_STEP_COMPLETED]: aggregate,
      [GraphEvents.ON_MESSAGE_DELTA]: aggregate,
      [GraphEvents.ON_REASONING_DELTA]: aggregate,
      [GraphEvents.ON_AGENT_UPDATE]: aggregate,
    };
    const abort = new AbortController();
    const run = await Run.create({
      runId,
      graphConfig: { ...graphs[graph](), signal: abort.signal },
      customHandlers,
      tokenCounter,
      indexTokenCountMap: {},
      returnContent: true,
    });
    const messages = [new HumanMessage(question)];
    await run.processStream(
      { messages },
      {
        runId,
        signal: abort.signal,
        configurable: { thread_id: runId, user_id: 'bench' },
        streamMode: 'values',
        version: 'v2',
        recursionLimit: 50,
      },
    );
    const texts = contentParts.filter((p) => p?.type === 'text').map((p) => p.text);
    return texts.at(-1) ?? '';
  };

  const batch = async (cmd) => {
    let session;
    if (cmd.profile) {
      session = new inspector.Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const walls = [];
    let failures = 0;
    let failure = '';
    const cpu0 = process.cpuUsage();
    for (let done = 0; done < cmd.runs; done += cmd.at_once) {
      const n = Math.min(cmd.at_once, cmd.runs - done);
      await Promise.all(
        Array.from({ length: n }, async () => {
          const t0 = performance.now();
          let answer;
          try {
            answer = await oneRun(cmd.graph);
          } catch (err) {
            answer = `error: ${err?.message ?? err}`;
          }
          walls.push(Math.round((performance.now() - t0) * 1000));
          if (answer !== cmd.want) {
            failures++;
            failure ||= answer;
          }
        }),
      );
    }
    const cpu = process.cpuUsage(cpu0);
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      fs.writeFileSync(cmd.profile, JSON.stringify(profile));
      session.disconnect();
    }
    return {
      walls_us: walls,
      cpu_us: cpu.user + cpu.system,
      rss_kib: Math.round(process.memoryUsage().rss / 1024),
      failures,
      failure,
    };
  };

  const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
  out({ ready: true, runtime: `node ${process.version}`, engine: `@librechat/agents ${agentsVersion}` });
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line.trim() === '') {
      continue;
    }
    out(await batch(JSON.parse(line)));
  }
  await mcp.close();
}

main().catch((err) => {
  console.error('agents.cjs:', err);
  process.exit(1);
});
