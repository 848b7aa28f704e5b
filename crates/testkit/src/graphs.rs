//! Graph shapes the workspace's tests build again and again.

use openarmature_graph::{CompiledGraph, GraphBuilder, Node, State, END};

/// A compiled graph whose only node is `node`, under `name`, from the default state.
///
/// # Panics
/// When the graph does not compile (a test's own mistake).
pub fn single_node<T: State + Default>(name: &str, node: impl Node<T>) -> CompiledGraph<T> {
    GraphBuilder::new(T::default())
        .add_node(name, node)
        .add_edge(name, END)
        .entry(name)
        .compile()
        .unwrap()
}
