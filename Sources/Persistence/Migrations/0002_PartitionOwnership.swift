extension Migration {
    static let partitionOwnership = Migration(
        version: 2, name: "partition ownership epochs",
        sql: """
            -- Who owns a partition of a consumer group's topic, as a number that grows with
            -- every assignment. A worker's batch commits only while its epoch is the current
            -- one, so a worker that stalled past its session and lost the partition can
            -- never write states over its successor's.
            CREATE TABLE partition_epochs (
                consumer_group text NOT NULL,
                topic text NOT NULL,
                partition integer NOT NULL,
                epoch bigint NOT NULL,
                owner text NOT NULL,
                acquired_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (consumer_group, topic, partition)
            );
            """)
}
