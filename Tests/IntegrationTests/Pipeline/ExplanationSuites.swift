import Testing

/// The pipelines that test the explanations (decision records, the device view, the event
/// log, erasure, the console) run one suite at a time: side by side with the rest of the run,
/// they would crowd a 2-core machine's timing-sensitive tests.
@Suite(.serialized) enum ExplanationSuites {}
