// Kafka
