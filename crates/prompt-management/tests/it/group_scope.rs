//! Prompt groups and the prompt-context binding (prompt-management §10, §12).

use std::sync::atomic::{AtomicBool, Ordering};

use openarmature_prompt::prompt_context::current;
use openarmature_prompt::{
    render_prompt, Prompt, PromptGroup, PromptIdentity, PromptResult, RenderOptions, TokenBudget,
};

fn rendered(name: &str) -> PromptResult {
    render_prompt(
        &Prompt::text(name, "v1", "production", format!("{name} prompt")),
        &(),
        None,
        RenderOptions::default(),
    )
    .unwrap()
}

#[test]
fn groups_need_two_or_more_members() {
    for members in [vec![], vec![rendered("only")]] {
        let n = members.len();
        let err = PromptGroup::new("g", members).unwrap_err();
        assert_eq!(err.category(), "prompt_group_invalid", "{n} members");
        assert!(!err.is_transient());
    }
    let two = PromptGroup::new("triage", vec![rendered("classify"), rendered("answer")]).unwrap();
    assert_eq!(two.group_name(), "triage");
    assert_eq!(two.len(), 2);
    assert_eq!(two.members()[1].name(), "answer");
    assert_eq!(two.member(0).map(PromptResult::name), Some("classify"));
    assert!(two.member(2).is_none());
    assert_eq!(two.identity().group_name, "triage");
    let three = PromptGroup::new("chain", vec![rendered("a"), rendered("b"), rendered("c")]);
    assert_eq!(three.unwrap().len(), 3);
}

#[tokio::test]
async fn scope_binds_the_identity_only_inside() {
    let result = render_prompt(
        &Prompt::text("greeting", "v1", "production", "Hi")
            .with_token_budget(TokenBudget::new(Some(10), None)),
        &(),
        None,
        RenderOptions::default(),
    )
    .unwrap();
    assert!(current().is_empty());
    let seen = result
        .scope(async { (current().prompt().cloned(), current().token_budget()) })
        .await;
    let expected = PromptIdentity::new(
        "greeting",
        "v1",
        "production",
        result.template_hash(),
        result.rendered_hash(),
    );
    assert_eq!(seen.0, Some(expected));
    assert_eq!(seen.1, Some(TokenBudget::new(Some(10), None)));
    assert!(current().is_empty());
    assert!(current().prompt().is_none());
}

#[tokio::test]
async fn scoped_futures_do_not_borrow_the_result() {
    let result = rendered("spawned");
    let fut = result.scope(async { current().prompt().map(|p| p.name.clone()) });
    drop(result);
    let name = tokio::spawn(fut).await.unwrap();
    assert_eq!(name.as_deref(), Some("spawned"));
}

#[tokio::test]
async fn group_and_member_bindings_nest() {
    let group = PromptGroup::new("triage", vec![rendered("classify"), rendered("answer")]).unwrap();
    let members = group.members().to_vec();
    let names = group
        .scope(async {
            let ctx = current();
            assert_eq!(ctx.group().map(|g| g.group_name.as_str()), Some("triage"));
            assert!(ctx.prompt().is_none());
            let mut names = Vec::new();
            for member in &members {
                let (g, p) = member
                    .scope(async {
                        let ctx = current();
                        (
                            ctx.group().map(|g| g.group_name.clone()),
                            ctx.prompt().map(|p| p.name.clone()),
                        )
                    })
                    .await;
                assert_eq!(g.as_deref(), Some("triage"));
                names.push(p.unwrap());
            }
            assert!(current().prompt().is_none());
            names
        })
        .await;
    assert_eq!(names, ["classify", "answer"]);
    assert!(current().is_empty());

    let (g, p) = group
        .scope_member(0, async {
            let ctx = current();
            (ctx.group().cloned(), ctx.prompt().cloned())
        })
        .await
        .unwrap();
    assert_eq!(g, Some(group.identity()));
    assert_eq!(p, Some(group.members()[0].identity()));
    assert!(current().is_empty());
}

#[tokio::test]
async fn scope_member_out_of_range_does_not_run() {
    let group = PromptGroup::new("g", vec![rendered("a"), rendered("b")]).unwrap();
    let ran = AtomicBool::new(false);
    let err = group
        .scope_member(2, async { ran.store(true, Ordering::SeqCst) })
        .await
        .unwrap_err();
    assert_eq!(err.category(), "invalid_argument");
    assert!(!ran.load(Ordering::SeqCst));
}
