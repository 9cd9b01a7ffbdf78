import CommandSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a file a command was given, refusing with what is wrong in words: Foundation's own
/// errors call the null device a matter of permission and a directory "error 256".
///
/// Regular files and pipes (`--fixes <(gunzip -c trip.jsonl.gz)`) are read to their end and the
/// null device reads as empty; any other device (a terminal, `/dev/zero`) would wait for a
/// person or never end, and is refused.
/// - Parameter name: how messages name the file: its path, or the option and path (`--fixes trip.jsonl`).
func readInputFile(_ path: String, naming name: String) throws -> Data {
    var status = stat()
    guard stat(path, &status) == 0 else { throw CommandFailure("\(name): \(fileProblem(errno: errno))") }
    switch status.st_mode & S_IFMT {
    case S_IFREG, S_IFIFO, S_IFSOCK: break
    case S_IFDIR: throw CommandFailure("\(name): is a directory, not a file")
    case S_IFCHR where isNullDevice(status): return Data()
    default: throw CommandFailure("\(name): is a device, not a regular file or a pipe")
    }
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw CommandFailure("\(name): \(fileProblem(errno: errno))") }
    let file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    do {
        return try file.readToEnd() ?? Data()
    } catch {
        throw CommandFailure("\(name): cannot be read: \(error.localizedDescription)")
    }
}

private func fileProblem(errno code: Int32) -> String {
    switch code {
    case ENOENT: "does not exist"
    case EACCES: "cannot be read: permission denied"
    default: "cannot be read: " + String(cString: strerror(code)).lowercased()
    }
}

private func isNullDevice(_ status: stat) -> Bool {
    var null = stat()
    return stat("/dev/null", &null) == 0 && (null.st_mode & S_IFMT) == S_IFCHR && null.st_rdev == status.st_rdev
}
