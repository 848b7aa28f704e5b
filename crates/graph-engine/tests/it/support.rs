//! Graph shapes several test modules build.

use openarmature_graph::{CompiledGraph, GraphBuilder, Node, State, END};

/// A graph whose only node is `node`, under `name`.
pub fn single_node<T: State + Default>(name: &str, node: impl Node<T>) -> CompiledGraph<T> {
    GraphBuilder::new(T::default())
        .add_node(name, node)
        .add_edge(name, END)
        .entry(name)
        .compile()
        .unwrap()
}
