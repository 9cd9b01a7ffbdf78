import Foundation
import Shared
import Testing

/// The checks every entry point shares (docs/http-api.md#limits).
@Suite struct InputLimitsTests {
    @Test func identifiers() {
        #expect(InputLimits.identifierProblem("zone-1") == nil)
        #expect(InputLimits.identifierProblem("") == "must not be empty")
        #expect(InputLimits.identifierProblem(String(repeating: "z", count: 129)) == "must be at most 128 characters")
        for control in ["\u{0}", "\u{1F}", "\u{7F}", "\u{9F}", "\t"] {
            #expect(InputLimits.identifierProblem("a\(control)b")?.contains("control characters") == true, "\(control.debugDescription)")
        }
        #expect(InputLimits.identifierProblem("\u{A0}") == nil)
    }

    @Test func freeTextAllowsTabsAndLineBreaksButNoOtherControlCharacters() {
        #expect(InputLimits.textProblem("one\ttwo\r\nthree", maximumLength: 20) == nil)
        #expect(InputLimits.textProblem("nul\u{0}", maximumLength: 20) != nil)
        #expect(InputLimits.textProblem("bell\u{7}", maximumLength: 20) != nil)
        #expect(InputLimits.textProblem("12345", maximumLength: 4) == "must be at most 4 characters")
    }

    @Test func webhookURLs() {
        #expect(InputLimits.urlProblem("https://partner.example/hooks?x=1") == nil)
        #expect(InputLimits.urlProblem("https://partner.example/\u{0}") != nil)
        #expect(InputLimits.urlProblem("https://partner.example/a b") != nil)
        #expect(InputLimits.urlProblem("https://p.example/" + String(repeating: "a", count: 2_048)) != nil)
    }
}
