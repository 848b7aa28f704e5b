//! The agent: its tools, model and limits ([`AgentBuilder`]), and the loop wired into
//! a graph ([`Agent::add_to`], [`Agent::graph`]).

use std::collections::HashSet;
use std::sync::Arc;

use openarmature_graph::{CompileError, CompiledGraph, GraphBuilder, NodeCtx, Target, END};
use openarmature_llm::{LlmRetryConfig, Provider, RuntimeConfig};

use crate::error::AgentError;
use crate::nodes::{model_step, pending_call, tools_step};
use crate::state::{AgentState, Conversation};
use crate::tool::Tool;

/// The default turn limit: model calls per user message.
pub const DEFAULT_MAX_TURNS: u32 = 8;

/// What the loop's nodes share.
pub(crate) struct AgentInner {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) definitions: Vec<openarmature_llm::Tool>,
    pub(crate) system: Option<String>,
    pub(crate) config: RuntimeConfig,
    pub(crate) retry: Option<LlmRetryConfig>,
    pub(crate) stream: bool,
    pub(crate) max_turns: u32,
    model_node: String,
    tools_node: String,
}

impl AgentInner {
    pub(crate) fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub(crate) fn tool_names(&self) -> String {
        let names: Vec<&str> = self.tools.iter().map(Tool::name).collect();
        names.join(", ")
    }
}

/// Configures an [`Agent`]: start with [`Agent::builder`].
#[must_use = "call build() to get the agent"]
pub struct AgentBuilder {
    provider: Arc<dyn Provider>,
    tools: Vec<Tool>,
    system: Option<String>,
    config: RuntimeConfig,
    retry: Option<LlmRetryConfig>,
    stream: bool,
    max_turns: u32,
    model_node: String,
    tools_node: String,
}

impl AgentBuilder {
    /// Adds a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// A system prompt, sent first on every model call unless the history already
    /// starts with a system message. It is not written to the history.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// The runtime config of every model call.
    pub fn config(mut self, config: RuntimeConfig) -> Self {
        self.config = config;
        self
    }

    /// Call-level retry for every model call.
    pub fn retry(mut self, retry: impl Into<LlmRetryConfig>) -> Self {
        self.retry = Some(retry.into());
        self
    }

    /// Streams every model call (`CompletionRequest::stream`): inside the graph,
    /// observers receive one `LlmTokenEvent` per delta (for a streamed chat reply).
    /// The provider must support streaming.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// The turn limit: model calls allowed per user message (default
    /// [`DEFAULT_MAX_TURNS`]). A model still calling tools after that many calls
    /// fails the node with [`AgentError::TurnLimitExceeded`].
    pub fn max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// The names of the two nodes the agent adds (default `agent` and `tools`).
    pub fn node_names(mut self, model: impl Into<String>, tools: impl Into<String>) -> Self {
        self.model_node = model.into();
        self.tools_node = tools.into();
        self
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`AgentError::Configuration`] for duplicate tool names, a tool whose argument
    /// schema is not an object schema, a zero turn limit, or equal node names.
    pub fn build(self) -> Result<Agent, AgentError> {
        let mut seen = HashSet::new();
        for tool in &self.tools {
            if !seen.insert(tool.name()) {
                return Err(AgentError::Configuration(format!(
                    "two tools are named `{}`",
                    tool.name()
                )));
            }
            let params = &tool.definition().parameters;
            if params.get("type").and_then(|t| t.as_str()) != Some("object") {
                return Err(AgentError::Configuration(format!(
                    "the arguments of tool `{}` are not an object schema (use a struct)",
                    tool.name()
                )));
            }
        }
        if self.max_turns == 0 {
            return Err(AgentError::Configuration(
                "max_turns must be at least 1".into(),
            ));
        }
        if self.model_node == self.tools_node {
            return Err(AgentError::Configuration(
                "the model and tools nodes need different names".into(),
            ));
        }
        let definitions = self.tools.iter().map(|t| t.definition().clone()).collect();
        Ok(Agent {
            inner: Arc::new(AgentInner {
                provider: self.provider,
                tools: self.tools,
                definitions,
                system: self.system,
                config: self.config,
                retry: self.retry,
                stream: self.stream,
                max_turns: self.max_turns,
                model_node: self.model_node,
                tools_node: self.tools_node,
            }),
        })
    }
}

/// A tool-calling agent: a model node that calls the provider with the tools, and a
/// tools node that runs the requested calls, looping until the model answers without
/// tool calls. Cheap to clone.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.provider.model())
            .field("tools", &self.inner.tool_names())
            .field("max_turns", &self.inner.max_turns)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts an agent over `provider`.
    pub fn builder(provider: Arc<dyn Provider>) -> AgentBuilder {
        AgentBuilder {
            provider,
            tools: Vec::new(),
            system: None,
            config: RuntimeConfig::default(),
            retry: None,
            stream: false,
            max_turns: DEFAULT_MAX_TURNS,
            model_node: "agent".to_owned(),
            tools_node: "tools".to_owned(),
        }
    }

    /// The model node's name (route into the agent here).
    pub fn model_node(&self) -> &str {
        &self.inner.model_node
    }

    /// The tools node's name.
    pub fn tools_node(&self) -> &str {
        &self.inner.tools_node
    }

    /// The provider-facing tool definitions, in declaration order.
    pub fn definitions(&self) -> &[openarmature_llm::Tool] {
        &self.inner.definitions
    }

    /// The turn limit.
    pub fn max_turns(&self) -> u32 {
        self.inner.max_turns
    }

    /// Adds the agent's two nodes and their conditional edges to `builder`: the model
    /// node routes to the tools node while a tool call is pending, else to `exit`; the
    /// tools node routes to itself while calls remain, else back to the model node.
    /// Route into [`Agent::model_node`] (or make it the entry).
    pub fn add_to<S: AgentState>(
        &self,
        builder: GraphBuilder<S>,
        exit: impl Into<Target>,
    ) -> GraphBuilder<S> {
        let exit = exit.into();
        let model = Target::from(self.model_node());
        let tools = Target::from(self.tools_node());
        let (model_inner, tools_inner) = (Arc::clone(&self.inner), Arc::clone(&self.inner));
        let (to_tools, after_model) = (tools.clone(), exit.clone());
        let (again, back) = (tools.clone(), model.clone());
        builder
            .add_node(self.model_node(), move |s: Arc<S>, ctx: NodeCtx| {
                model_step(Arc::clone(&model_inner), s, ctx)
            })
            .add_node(self.tools_node(), move |s: Arc<S>, ctx: NodeCtx| {
                tools_step(Arc::clone(&tools_inner), s, ctx)
            })
            .add_conditional_edge(
                self.model_node(),
                move |s: &S| {
                    Ok(match pending_call(s.messages()) {
                        Some(_) => to_tools.clone(),
                        None => after_model.clone(),
                    })
                },
                Some(vec![tools.clone(), exit]),
            )
            .add_conditional_edge(
                self.tools_node(),
                move |s: &S| {
                    Ok(match pending_call(s.messages()) {
                        Some(_) => again.clone(),
                        None => back.clone(),
                    })
                },
                Some(vec![tools, model]),
            )
    }

    /// The standalone agent graph over [`Conversation`], not yet compiled: entry at
    /// the model node, `END` after the final answer. Add a checkpointer, sessions or
    /// observers, then compile.
    pub fn graph_builder(&self) -> GraphBuilder<Conversation> {
        self.add_to(GraphBuilder::new(Conversation::default()), END)
            .entry(self.model_node())
    }

    /// [`Agent::graph_builder`], compiled. Run it with [`CompiledGraph::run`] to
    /// receive an approval suspension as an outcome.
    ///
    /// # Errors
    /// The engine's [`CompileError`] (none for a built agent).
    pub fn graph(&self) -> Result<CompiledGraph<Conversation>, CompileError> {
        self.graph_builder().compile()
    }
}
