// Evaluator
