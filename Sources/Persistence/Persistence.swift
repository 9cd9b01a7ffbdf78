// Persistence
