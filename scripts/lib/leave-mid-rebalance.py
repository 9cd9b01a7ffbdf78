#!/usr/bin/env python3
"""Leaves a consumer group as its leader in the middle of a rebalance.

    leave-mid-rebalance.py BROKER GROUP TOPIC

Speaks the Kafka group protocol (version 0 requests) over a plain socket, as two
members: the first joins and syncs alone (it leads a stable group), the second asks
to join (a rebalance starts, the first still its leader), and the first leaves
before the rebalance completes. A coordinator that keeps a departed member as the
leader of every later generation (the embedded local broker does) is left with a
group no member can complete a rebalance of: a test of the recovery from that.
Prints what the coordinator answered; exits non-zero if a request failed.
"""
import socket
import struct
import sys
import threading
import time

JOIN_GROUP, SYNC_GROUP, LEAVE_GROUP = 11, 14, 13


def string(value):
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def bytes_field(data):
    return struct.pack(">i", len(data)) + data


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self):
        length = self.take(">h")
        value = self.data[self.at:self.at + max(length, 0)].decode()
        self.at += max(length, 0)
        return value


class Member:
    """One connection to the broker, one member of the group."""

    def __init__(self, broker, client_id):
        host, port = broker.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.client_id = client_id
        self.correlation = 0

    def request(self, api_key, body):
        self.correlation += 1
        header = struct.pack(">hhi", api_key, 0, self.correlation) + string(self.client_id)
        message = header + body
        self.sock.sendall(struct.pack(">i", len(message)) + message)
        size = struct.unpack(">i", self.receive(4))[0]
        reader = Reader(self.receive(size))
        if reader.take(">i") != self.correlation:
            raise RuntimeError("correlation id mismatch")
        return reader

    def receive(self, count):
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise RuntimeError("connection closed")
            data += chunk
        return data


def subscription(topic):
    # ConsumerProtocolMemberMetadata v0: version, topics, user data.
    return struct.pack(">h", 0) + struct.pack(">i", 1) + string(topic) + bytes_field(b"")


MEMBER_ID_REQUIRED = 79


def join(member, group, topic, member_id=""):
    body = (
        string(group) + struct.pack(">i", 30000) + string(member_id) + string("consumer")
        + struct.pack(">i", 1) + string("range") + bytes_field(subscription(topic))
    )
    reply = member.request(JOIN_GROUP, body)
    error, generation = reply.take(">h"), reply.take(">i")
    protocol, leader, member_id = reply.string(), reply.string(), reply.string()
    if error == MEMBER_ID_REQUIRED:
        # The coordinator names the member first and wants the join again under that id.
        return join(member, group, topic, member_id)
    return error, generation, protocol, leader, member_id


def main():
    broker, group, topic = sys.argv[1:4]
    first = Member(broker, "departing-leader")
    error, generation, _, leader, first_id = join(first, group, topic)
    print(f"first join: error {error}, generation {generation}, leader {leader}, member {first_id}", flush=True)
    if error != 0:
        return 1
    # The leader's assignment: every partition of the topic to itself (ConsumerProtocolAssignment v0).
    assignment = struct.pack(">h", 0) + struct.pack(">i", 1) + string(topic) + struct.pack(">ii", 1, 0) + bytes_field(b"")
    sync = (
        string(group) + struct.pack(">i", generation) + string(first_id)
        + struct.pack(">i", 1) + string(first_id) + bytes_field(assignment)
    )
    reply = first.request(SYNC_GROUP, sync)
    error = reply.take(">h")
    print(f"first sync: error {error}", flush=True)
    if error != 0:
        return 1

    # The second member's join starts a rebalance; its answer waits while the first leads.
    second = Member(broker, "joining-follower")
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(join(second, group, topic)), daemon=True)
    waiting.start()
    time.sleep(1)
    reply = first.request(LEAVE_GROUP, string(group) + string(first_id))
    error = reply.take(">h")
    print(f"first left mid-rebalance: error {error}", flush=True)
    waiting.join(timeout=20)
    if answers:
        error, generation, _, leader, second_id = answers[0]
        print(f"second join: error {error}, generation {generation}, leader {leader}, member {second_id}", flush=True)
        # The follower leaves too, so that only the departed leader's record remains.
        second.request(LEAVE_GROUP, string(group) + string(second_id))
    return 0 if error == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
