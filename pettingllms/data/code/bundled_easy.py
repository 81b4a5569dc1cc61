"""The twenty "easy" bundled problems: arithmetic and string manipulation."""

from __future__ import annotations

import numpy as np

from pettingllms.data.code.bundled_spec import BundledSpec, integer, integers, line, lines, word


def _sum_pairs(rng: np.random.Generator) -> str:
    t = integer(rng, 1, 10)
    return lines(t, *[integers(rng, 2, -(10**9), 10**9) for _ in range(t)])


def _int_list(rng: np.random.Generator, min_n: int = 1, max_n: int = 30, bound: int = 1000) -> str:
    n = integer(rng, min_n, max_n)
    return lines(n, integers(rng, n, -bound, bound))


def _sentence(rng: np.random.Generator, max_words: int = 10, max_len: int = 8) -> str:
    return line([word(rng, 1, max_len) for _ in range(integer(rng, 1, max_words))])


def _palindrome(rng: np.random.Generator) -> str:
    half = word(rng, 0, 10, "abc")
    if rng.random() < 0.5:
        return half + word(rng, 0, 1, "abc") + half[::-1] + "\n" if half else "a\n"
    return word(rng, 1, 20, "abc") + "\n"


def _digits(rng: np.random.Generator) -> str:
    if rng.random() < 0.1:
        return "0\n"
    return str(integer(rng, 1, 9)) + word(rng, 0, 60, "0123456789") + "\n"


def _caesar(rng: np.random.Generator) -> str:
    return lines(integer(rng, 0, 25), _sentence(rng))


def _gcd_lcm(rng: np.random.Generator) -> str:
    common = integer(rng, 1, 1000)
    return lines([common * integer(rng, 1, 10**6), common * integer(rng, 1, 10**6)])


def _leap_years(rng: np.random.Generator) -> str:
    a = integer(rng, 1, 3000)
    return lines([a, a + integer(rng, 0, 1000)])


def _second_largest(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 12)
    return lines(n, integers(rng, n, -5, 5 if rng.random() < 0.8 else -5))


def _run_length(rng: np.random.Generator) -> str:
    return "".join(c * integer(rng, 1, 12) for c in word(rng, 1, 8, "abcd")) + "\n"


def _to_binary(rng: np.random.Generator) -> str:
    t = integer(rng, 1, 6)
    return lines(t, *[integer(rng, 0, 10 ** integer(rng, 1, 18)) for _ in range(t)])


def _anagram(rng: np.random.Generator) -> str:
    first = word(rng, 1, 10, "abcde")
    if rng.random() < 0.5:
        return lines(first, "".join(rng.permutation(list(first))))
    return lines(first, word(rng, 1, 10, "abcde"))


SPECS = (
    BundledSpec(
        slug="sum-pairs",
        difficulty="easy",
        statement="""
            Sum of pairs

            Add up each pair of integers.

            Input
            The first line holds an integer T (1 <= T <= 10). Each of the next T lines holds two integers a and b
            (-10^9 <= a, b <= 10^9).

            Output
            Print T lines: the i-th holds a + b for the i-th pair.
        """,
        reference="""
            import sys
            data = sys.stdin.read().split()
            t = int(data[0])
            for i in range(t):
                print(int(data[1 + 2 * i]) + int(data[2 + 2 * i]))
        """,
        example="2\n1 2\n-5 3\n",
        generate=_sum_pairs,
    ),
    BundledSpec(
        slug="min-max",
        difficulty="easy",
        statement="""
            Smallest and largest

            Find the smallest and the largest number of a list.

            Input
            The first line holds n (1 <= n <= 30); the second line holds n integers, each between -1000 and 1000.

            Output
            Print the smallest and the largest number, separated by a space.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            values = data[1:1 + data[0]]
            print(min(values), max(values))
        """,
        example="5\n3 -1 7 7 0\n",
        generate=_int_list,
    ),
    BundledSpec(
        slug="reverse-words",
        difficulty="easy",
        statement="""
            Reverse the words

            Print the words of a sentence in reverse order.

            Input
            One line with 1 to 10 words of lowercase letters, separated by single spaces.

            Output
            The same words in reverse order, separated by single spaces.
        """,
        reference="""
            print(" ".join(input().split()[::-1]))
        """,
        example="the quick brown fox\n",
        generate=lambda rng: _sentence(rng) + "\n",
    ),
    BundledSpec(
        slug="count-vowels",
        difficulty="easy",
        statement="""
            Count the vowels

            Count the vowels (a, e, i, o, u) in a line of text.

            Input
            One line with 1 to 10 words of lowercase letters, separated by single spaces.

            Output
            The number of vowels in the line.
        """,
        reference="""
            print(sum(ch in "aeiou" for ch in input()))
        """,
        example="hello world\n",
        generate=lambda rng: _sentence(rng) + "\n",
    ),
    BundledSpec(
        slug="palindrome",
        difficulty="easy",
        statement="""
            Palindrome

            Decide whether a word reads the same forwards and backwards.

            Input
            One line with a word of 1 to 21 lowercase letters.

            Output
            YES if the word is a palindrome, NO otherwise.
        """,
        reference="""
            s = input().strip()
            print("YES" if s == s[::-1] else "NO")
        """,
        example="abcba\n",
        generate=_palindrome,
    ),
    BundledSpec(
        slug="fizzbuzz",
        difficulty="easy",
        statement="""
            FizzBuzz

            For every number i from 1 to n print Fizz if i is divisible by 3 only, Buzz if it is divisible by 5
            only, FizzBuzz if it is divisible by both, and the number itself otherwise.

            Input
            One integer n (1 <= n <= 40).

            Output
            n lines, the i-th for the number i.
        """,
        reference="""
            n = int(input())
            for i in range(1, n + 1):
                word = ("Fizz" if i % 3 == 0 else "") + ("Buzz" if i % 5 == 0 else "")
                print(word or i)
        """,
        example="5\n",
        generate=lambda rng: f"{integer(rng, 1, 40)}\n",
    ),
    BundledSpec(
        slug="digit-sum",
        difficulty="easy",
        statement="""
            Digit sum

            Add up the decimal digits of a (possibly very large) non-negative integer.

            Input
            One non-negative integer with at most 61 digits and no leading zeros.

            Output
            The sum of its digits.
        """,
        reference="""
            print(sum(int(ch) for ch in input().strip()))
        """,
        example="90210\n",
        generate=_digits,
    ),
    BundledSpec(
        slug="even-odd-count",
        difficulty="easy",
        statement="""
            Even and odd

            Count the even and the odd numbers of a list.

            Input
            The first line holds n (1 <= n <= 30); the second line holds n integers, each between -1000 and 1000.

            Output
            Two numbers separated by a space: how many are even, then how many are odd.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            values = data[1:1 + data[0]]
            even = sum(v % 2 == 0 for v in values)
            print(even, len(values) - even)
        """,
        example="4\n1 2 3 -4\n",
        generate=_int_list,
    ),
    BundledSpec(
        slug="above-average",
        difficulty="easy",
        statement="""
            Above average

            Count the numbers of a list that are strictly greater than the list's average.

            Input
            The first line holds n (1 <= n <= 30); the second line holds n integers, each between -1000 and 1000.

            Output
            How many numbers are strictly greater than the average of all n numbers.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, values = data[0], data[1:1 + data[0]]
            total = sum(values)
            print(sum(v * n > total for v in values))
        """,
        example="4\n1 2 3 10\n",
        generate=_int_list,
    ),
    BundledSpec(
        slug="caesar-shift",
        difficulty="easy",
        statement="""
            Caesar shift

            Shift every letter of a sentence k places forward in the alphabet, wrapping from z back to a.
            Spaces stay as they are.

            Input
            The first line holds k (0 <= k <= 25). The second line holds 1 to 10 words of lowercase letters,
            separated by single spaces.

            Output
            The shifted sentence.
        """,
        reference="""
            k = int(input())
            text = input()
            print("".join(ch if ch == " " else chr((ord(ch) - 97 + k) % 26 + 97) for ch in text))
        """,
        example="3\nxyz abc\n",
        generate=_caesar,
    ),
    BundledSpec(
        slug="capitalize-words",
        difficulty="easy",
        statement="""
            Capitalize the words

            Make the first letter of every word uppercase.

            Input
            One line with 1 to 10 words of lowercase letters, separated by single spaces.

            Output
            The same words, each with its first letter in uppercase, separated by single spaces.
        """,
        reference="""
            print(" ".join(w[0].upper() + w[1:] for w in input().split()))
        """,
        example="hello big world\n",
        generate=lambda rng: _sentence(rng) + "\n",
    ),
    BundledSpec(
        slug="gcd-lcm",
        difficulty="easy",
        statement="""
            GCD and LCM

            Compute the greatest common divisor and the least common multiple of two positive integers.

            Input
            One line with two integers a and b (1 <= a, b <= 10^9).

            Output
            gcd(a, b) and lcm(a, b), separated by a space.
        """,
        reference="""
            import math
            a, b = map(int, input().split())
            g = math.gcd(a, b)
            print(g, a // g * b)
        """,
        example="12 18\n",
        generate=_gcd_lcm,
    ),
    BundledSpec(
        slug="leap-years",
        difficulty="easy",
        statement="""
            Leap years

            Count the leap years from year a to year b, both included, in the Gregorian calendar: a year is a
            leap year if it is divisible by 4, except years divisible by 100 that are not divisible by 400.

            Input
            One line with two integers a and b (1 <= a <= b <= 4000).

            Output
            The number of leap years y with a <= y <= b.
        """,
        reference="""
            a, b = map(int, input().split())
            print(sum(1 for y in range(a, b + 1) if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)))
        """,
        example="1896 1904\n",
        generate=_leap_years,
    ),
    BundledSpec(
        slug="second-largest",
        difficulty="easy",
        statement="""
            Second largest

            Find the second largest distinct value of a list.

            Input
            The first line holds n (1 <= n <= 12); the second line holds n integers, each between -5 and 5.

            Output
            The largest value that is strictly smaller than the maximum, or NONE if all values are equal.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            values = sorted(set(data[1:1 + data[0]]))
            print(values[-2] if len(values) > 1 else "NONE")
        """,
        example="5\n4 1 4 3 2\n",
        generate=_second_largest,
    ),
    BundledSpec(
        slug="run-length",
        difficulty="easy",
        statement="""
            Run-length encoding

            Encode a word by replacing every maximal run of equal letters with the letter followed by the
            length of the run.

            Input
            One line with a word of lowercase letters (at most 100 letters).

            Output
            The encoded word, e.g. aaabcc becomes a3b1c2.
        """,
        reference="""
            s = input().strip()
            out, i = [], 0
            while i < len(s):
                j = i
                while j < len(s) and s[j] == s[i]:
                    j += 1
                out.append(s[i] + str(j - i))
                i = j
            print("".join(out))
        """,
        example="aaabccddddd\n",
        generate=_run_length,
    ),
    BundledSpec(
        slug="longest-word",
        difficulty="easy",
        statement="""
            Longest word

            Find the longest word of a sentence.

            Input
            One line with 1 to 10 words of lowercase letters, separated by single spaces.

            Output
            The longest word; if several words share the greatest length, the first of them.
        """,
        reference="""
            words = input().split()
            print(max(words, key=len))
        """,
        example="a bb cc ddd eee\n",
        generate=lambda rng: _sentence(rng) + "\n",
    ),
    BundledSpec(
        slug="to-binary",
        difficulty="easy",
        statement="""
            Binary

            Write non-negative integers in base 2.

            Input
            The first line holds T (1 <= T <= 6). Each of the next T lines holds an integer n
            (0 <= n <= 10^18).

            Output
            T lines: n in binary, without leading zeros (0 is written as 0).
        """,
        reference="""
            import sys
            data = sys.stdin.read().split()
            for token in data[1:1 + int(data[0])]:
                print(bin(int(token))[2:])
        """,
        example="3\n5\n0\n1024\n",
        generate=_to_binary,
    ),
    BundledSpec(
        slug="staircase",
        difficulty="easy",
        statement="""
            Staircase

            Draw a staircase of # characters.

            Input
            One integer n (1 <= n <= 20).

            Output
            n lines; line i (counting from 1) holds exactly i characters #.
        """,
        reference="""
            n = int(input())
            for i in range(1, n + 1):
                print("#" * i)
        """,
        example="3\n",
        generate=lambda rng: f"{integer(rng, 1, 20)}\n",
    ),
    BundledSpec(
        slug="anagram-check",
        difficulty="easy",
        statement="""
            Anagrams

            Decide whether two words use exactly the same letters, each the same number of times.

            Input
            Two lines, each with a word of 1 to 10 lowercase letters.

            Output
            YES if the words are anagrams of each other, NO otherwise.
        """,
        reference="""
            a = input().strip()
            b = input().strip()
            print("YES" if sorted(a) == sorted(b) else "NO")
        """,
        example="listen\nsilent\n",
        generate=_anagram,
    ),
    BundledSpec(
        slug="seconds-to-clock",
        difficulty="easy",
        statement="""
            Clock time

            Write a number of seconds as hours, minutes and seconds.

            Input
            One integer s (0 <= s < 360000).

            Output
            H:MM:SS, where H is the number of whole hours (no leading zeros) and MM and SS are the remaining
            minutes and seconds, each written with two digits.
        """,
        reference="""
            s = int(input())
            print(f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}")
        """,
        example="3725\n",
        generate=lambda rng: f"{integer(rng, 0, 359999)}\n",
    ),
)
