"""The twenty "medium" bundled problems: sorting, counting, prefix sums, stacks and sliding windows."""

from __future__ import annotations

import numpy as np

from pettingllms.data.code.bundled_spec import BundledSpec, integer, integers, lines, word


def _array(rng: np.random.Generator, max_n: int, low: int, high: int) -> tuple[int, list[int]]:
    n = integer(rng, 1, max_n)
    return n, integers(rng, n, low, high)


def _range_sums(rng: np.random.Generator) -> str:
    n, a = _array(rng, 40, -100, 100)
    q = integer(rng, 1, 10)
    queries = [sorted(integers(rng, 2, 1, n)) for _ in range(q)]
    return lines([n, q], a, *queries)


def _top_words(rng: np.random.Generator) -> str:
    words = [word(rng, 1, 3, "abc") for _ in range(integer(rng, 1, 25))]
    return lines(integer(rng, 1, 6), words)


def _people(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 10)
    return lines(n, *[[word(rng, 2, 6).capitalize(), integer(rng, 18, 25)] for _ in range(n)])


def _pair_sums(rng: np.random.Generator) -> str:
    n, a = _array(rng, 30, -10, 10)
    return lines([n, integer(rng, -10, 10)], a)


def _intervals(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 12)
    rows = []
    for _ in range(n):
        start = integer(rng, 0, 50)
        rows.append([start, start + integer(rng, 0, 8)])
    return lines(n, *rows)


def _unique_substring(rng: np.random.Generator) -> str:
    return word(rng, 1, 40, "abcdefgh") + "\n"


def _kth(rng: np.random.Generator) -> str:
    n, a = _array(rng, 30, -50, 50)
    return lines([n, integer(rng, 1, n)], a)


def _brackets(rng: np.random.Generator) -> str:
    def balanced(depth: int) -> str:
        parts = []
        for _ in range(integer(rng, 1, 3)):
            opening, closing = ["()", "[]", "{}"][integer(rng, 0, 2)]
            parts.append(opening + (balanced(depth - 1) if depth and rng.random() < 0.6 else "") + closing)
        return "".join(parts)

    strings = []
    for _ in range(integer(rng, 1, 5)):
        s = balanced(3)
        if rng.random() < 0.5:
            i = integer(rng, 0, len(s) - 1)
            s = (
                s[:i] + s[i + 1 :]
                if rng.random() < 0.5
                else s[:i] + "([{)]}"[integer(rng, 0, 5)] + s[i + 1 :]
            )
        strings.append(s)
    return lines(len(strings), *strings)


def _matrix(rng: np.random.Generator) -> str:
    r, c = integer(rng, 1, 6), integer(rng, 1, 6)
    return lines([r, c], *[integers(rng, c, 0, 99) for _ in range(r)])


def _windows(rng: np.random.Generator) -> str:
    n, a = _array(rng, 30, 1, 6)
    return lines([n, integer(rng, 1, n)], a)


def _half_open(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 15)
    rows = []
    for _ in range(n):
        start = integer(rng, 0, 30)
        rows.append([start, start + integer(rng, 1, 10)])
    return lines(n, *rows)


def _subarray_target(rng: np.random.Generator) -> str:
    n, a = _array(rng, 30, -3, 3)
    return lines([n, integer(rng, -3, 3)], a)


def _anagram_words(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 15)
    return lines(n, [word(rng, 1, 3, "abc") for _ in range(n)])


def _rotation(rng: np.random.Generator) -> str:
    n, a = _array(rng, 20, -99, 99)
    return lines([n, integer(rng, 0, 10**9)], a)


def _prime_queries(rng: np.random.Generator) -> str:
    t = integer(rng, 1, 5)
    return lines(t, *[integer(rng, 1, 10 ** integer(rng, 1, 5)) for _ in range(t)])


def _prices(rng: np.random.Generator) -> str:
    n, a = _array(rng, 30, 1, 100)
    return lines(n, a)


def _majority(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 15)
    if rng.random() < 0.5:
        value = integer(rng, 1, 5)
        a = [value if rng.random() < 0.8 else integer(rng, 1, 5) for _ in range(n)]
    else:
        a = integers(rng, n, 1, 5)
    return lines(n, a)


def _grid_queries(rng: np.random.Generator) -> str:
    r, c, q = integer(rng, 1, 6), integer(rng, 1, 6), integer(rng, 1, 6)
    grid = [integers(rng, c, -9, 9) for _ in range(r)]
    queries = []
    for _ in range(q):
        r1, r2 = sorted(integers(rng, 2, 1, r))
        c1, c2 = sorted(integers(rng, 2, 1, c))
        queries.append([r1, c1, r2, c2])
    return lines([r, c, q], *grid, *queries)


def _next_greater(rng: np.random.Generator) -> str:
    n, a = _array(rng, 25, 1, 20)
    return lines(n, a)


SPECS = (
    BundledSpec(
        slug="range-sum-queries",
        difficulty="medium",
        statement="""
            Range sums

            Answer queries for the sum of a contiguous part of an array.

            Input
            The first line holds n and q (1 <= n <= 40, 1 <= q <= 10). The second line holds n integers a_1 ... a_n
            (-100 <= a_i <= 100). Each of the next q lines holds a query l r (1 <= l <= r <= n).

            Output
            q lines: the sum a_l + ... + a_r for each query.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, q = data[0], data[1]
            prefix = [0]
            for value in data[2:2 + n]:
                prefix.append(prefix[-1] + value)
            pos = 2 + n
            for _ in range(q):
                l, r = data[pos], data[pos + 1]
                pos += 2
                print(prefix[r] - prefix[l - 1])
        """,
        example="5 3\n1 -2 3 4 5\n1 5\n2 3\n4 4\n",
        generate=_range_sums,
    ),
    BundledSpec(
        slug="top-k-words",
        difficulty="medium",
        statement="""
            Most frequent words

            List the k most frequent words of a text.

            Input
            The first line holds k (1 <= k <= 6). The second line holds 1 to 25 words of lowercase letters,
            separated by single spaces.

            Output
            The k most frequent words (all distinct words if there are fewer than k), one per line, each followed
            by a space and its number of occurrences. Order them by number of occurrences, most frequent first;
            break ties alphabetically.
        """,
        reference="""
            import sys
            from collections import Counter
            data = sys.stdin.read().split()
            k, counts = int(data[0]), Counter(data[1:])
            for w, c in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]:
                print(w, c)
        """,
        example="2\nb a c b a d b\n",
        generate=_top_words,
    ),
    BundledSpec(
        slug="sort-people",
        difficulty="medium",
        statement="""
            Sort people

            Sort people by age, youngest first; people of the same age are sorted by name alphabetically
            (by character codes, so uppercase letters come before lowercase ones).

            Input
            The first line holds n (1 <= n <= 10). Each of the next n lines holds a name (letters only) and an
            age (an integer between 18 and 25).

            Output
            The n names in sorted order, one per line.
        """,
        reference="""
            import sys
            data = sys.stdin.read().split()
            n = int(data[0])
            people = [(int(data[2 + 2 * i]), data[1 + 2 * i]) for i in range(n)]
            for age, name in sorted(people):
                print(name)
        """,
        example="3\nZoe 20\nAdam 22\nMax 20\n",
        generate=_people,
    ),
    BundledSpec(
        slug="pair-sum-count",
        difficulty="medium",
        statement="""
            Pairs with a given sum

            Count the pairs of positions i < j with a_i + a_j = t.

            Input
            The first line holds n and t (1 <= n <= 30, -10 <= t <= 10). The second line holds n integers
            a_1 ... a_n (-10 <= a_i <= 10).

            Output
            The number of pairs (i, j) with i < j and a_i + a_j = t.
        """,
        reference="""
            import sys
            from collections import Counter
            data = list(map(int, sys.stdin.read().split()))
            n, t = data[0], data[1]
            seen, pairs = Counter(), 0
            for value in data[2:2 + n]:
                pairs += seen[t - value]
                seen[value] += 1
            print(pairs)
        """,
        example="5 4\n1 3 2 2 3\n",
        generate=_pair_sums,
    ),
    BundledSpec(
        slug="max-subarray",
        difficulty="medium",
        statement="""
            Maximum subarray

            Find the largest sum of a non-empty contiguous part of an array.

            Input
            The first line holds n (1 <= n <= 30). The second line holds n integers a_1 ... a_n
            (-50 <= a_i <= 50).

            Output
            The largest sum a_l + ... + a_r over all 1 <= l <= r <= n.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            best, current = None, 0
            for value in data[1:1 + data[0]]:
                current = max(value, current + value)
                best = current if best is None else max(best, current)
            print(best)
        """,
        example="6\n-2 3 -1 4 -10 2\n",
        generate=lambda rng: lines(*_array(rng, 30, -50, 50)),
    ),
    BundledSpec(
        slug="merge-intervals",
        difficulty="medium",
        statement="""
            Merge intervals

            Merge closed intervals [l, r] that overlap or touch (share at least one point) until none do.

            Input
            The first line holds n (1 <= n <= 12). Each of the next n lines holds l and r (0 <= l <= r <= 58).

            Output
            First the number m of merged intervals, then m lines "l r" in increasing order of l.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            intervals = sorted((data[1 + 2 * i], data[2 + 2 * i]) for i in range(n))
            merged = []
            for l, r in intervals:
                if merged and l <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], r)
                else:
                    merged.append([l, r])
            print(len(merged))
            for l, r in merged:
                print(l, r)
        """,
        example="4\n1 3\n3 5\n7 8\n6 6\n",
        generate=_intervals,
    ),
    BundledSpec(
        slug="longest-unique-substring",
        difficulty="medium",
        statement="""
            Longest substring without repeats

            Find the length of the longest contiguous substring in which no letter appears twice.

            Input
            One line with a word of 1 to 40 lowercase letters.

            Output
            The length of the longest substring with all letters distinct.
        """,
        reference="""
            s = input().strip()
            last, start, best = {}, 0, 0
            for i, ch in enumerate(s):
                if last.get(ch, -1) >= start:
                    start = last[ch] + 1
                last[ch] = i
                best = max(best, i - start + 1)
            print(best)
        """,
        example="abcabcbb\n",
        generate=_unique_substring,
    ),
    BundledSpec(
        slug="kth-smallest",
        difficulty="medium",
        statement="""
            K-th smallest

            Find the k-th smallest element of an array, counting repeated values separately.

            Input
            The first line holds n and k (1 <= k <= n <= 30). The second line holds n integers, each between -50
            and 50.

            Output
            The element at position k (counting from 1) of the array sorted in non-decreasing order.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, k = data[0], data[1]
            print(sorted(data[2:2 + n])[k - 1])
        """,
        example="6 3\n5 1 4 1 3 9\n",
        generate=_kth,
    ),
    BundledSpec(
        slug="balanced-brackets",
        difficulty="medium",
        statement="""
            Balanced brackets

            Decide, for each string of brackets, whether it is balanced: every opening bracket is closed by the
            matching closing bracket of the same kind, in the right order.

            Input
            The first line holds T (1 <= T <= 5). Each of the next T lines holds a non-empty string of the
            characters ()[]{}.

            Output
            T lines: YES if the string is balanced, NO otherwise.
        """,
        reference="""
            import sys
            data = sys.stdin.read().split()
            pairs = {")": "(", "]": "[", "}": "{"}
            for s in data[1:1 + int(data[0])]:
                stack, ok = [], True
                for ch in s:
                    if ch in pairs:
                        if not stack or stack.pop() != pairs[ch]:
                            ok = False
                            break
                    else:
                        stack.append(ch)
                print("YES" if ok and not stack else "NO")
        """,
        example="3\n([]{})\n([)]\n((\n",
        generate=_brackets,
    ),
    BundledSpec(
        slug="spiral-order",
        difficulty="medium",
        statement="""
            Spiral order

            Read a matrix in clockwise spiral order: along the top row left to right, down the right column,
            along the bottom row right to left, up the left column, then the same for the inner matrix, and so
            on until every element is read once.

            Input
            The first line holds r and c (1 <= r, c <= 6). Each of the next r lines holds c integers between 0
            and 99.

            Output
            The r * c elements in spiral order on one line, separated by spaces.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            r, c = data[0], data[1]
            grid = [data[2 + i * c:2 + (i + 1) * c] for i in range(r)]
            top, bottom, left, right = 0, r - 1, 0, c - 1
            out = []
            while top <= bottom and left <= right:
                out += grid[top][left:right + 1]
                out += [grid[i][right] for i in range(top + 1, bottom + 1)]
                if top < bottom:
                    out += grid[bottom][left:right][::-1]
                if left < right:
                    out += [grid[i][left] for i in range(bottom - 1, top, -1)]
                top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
            print(" ".join(map(str, out)))
        """,
        example="3 4\n1 2 3 4\n5 6 7 8\n9 10 11 12\n",
        generate=_matrix,
    ),
    BundledSpec(
        slug="window-distinct",
        difficulty="medium",
        statement="""
            Distinct values in every window

            For every window of k consecutive elements, count how many distinct values it holds.

            Input
            The first line holds n and k (1 <= k <= n <= 30). The second line holds n integers between 1 and 6.

            Output
            n - k + 1 numbers on one line, separated by spaces: the i-th is the number of distinct values among
            a_i ... a_(i+k-1).
        """,
        reference="""
            import sys
            from collections import Counter
            data = list(map(int, sys.stdin.read().split()))
            n, k = data[0], data[1]
            a = data[2:2 + n]
            window = Counter(a[:k])
            out = [len(window)]
            for i in range(k, n):
                window[a[i]] += 1
                window[a[i - k]] -= 1
                if window[a[i - k]] == 0:
                    del window[a[i - k]]
                out.append(len(window))
            print(" ".join(map(str, out)))
        """,
        example="6 3\n1 2 1 3 3 3\n",
        generate=_windows,
    ),
    BundledSpec(
        slug="max-overlap",
        difficulty="medium",
        statement="""
            Busiest moment

            Meetings run over half-open time intervals [s, e): a meeting that ends at time t and one that starts
            at time t do not overlap. Find the largest number of meetings running at the same moment.

            Input
            The first line holds n (1 <= n <= 15). Each of the next n lines holds s and e (0 <= s < e <= 40).

            Output
            The maximum number of meetings that run at the same time.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            events = []
            for i in range(data[0]):
                events.append((data[1 + 2 * i], 1))
                events.append((data[2 + 2 * i], -1))
            events.sort()
            best = current = 0
            for _, delta in events:
                current += delta
                best = max(best, current)
            print(best)
        """,
        example="3\n1 4\n2 5\n4 6\n",
        generate=_half_open,
    ),
    BundledSpec(
        slug="subarray-sum-count",
        difficulty="medium",
        statement="""
            Subarrays with a given sum

            Count the non-empty contiguous subarrays whose elements add up to k.

            Input
            The first line holds n and k (1 <= n <= 30, -3 <= k <= 3). The second line holds n integers, each
            between -3 and 3.

            Output
            The number of pairs (l, r) with 1 <= l <= r <= n and a_l + ... + a_r = k.
        """,
        reference="""
            import sys
            from collections import Counter
            data = list(map(int, sys.stdin.read().split()))
            n, k = data[0], data[1]
            seen, prefix, count = Counter({0: 1}), 0, 0
            for value in data[2:2 + n]:
                prefix += value
                count += seen[prefix - k]
                seen[prefix] += 1
            print(count)
        """,
        example="5 2\n1 1 0 2 -2\n",
        generate=_subarray_target,
    ),
    BundledSpec(
        slug="anagram-groups",
        difficulty="medium",
        statement="""
            Anagram groups

            Group words that are anagrams of each other (the same letters, each the same number of times);
            equal words belong to the same group.

            Input
            The first line holds n (1 <= n <= 15). The second line holds n words of lowercase letters, separated
            by single spaces.

            Output
            Two numbers separated by a space: the number of groups and the size of the largest group.
        """,
        reference="""
            import sys
            from collections import Counter
            data = sys.stdin.read().split()
            groups = Counter("".join(sorted(w)) for w in data[1:1 + int(data[0])])
            print(len(groups), max(groups.values()))
        """,
        example="5\nab ba abc cab x\n",
        generate=_anagram_words,
    ),
    BundledSpec(
        slug="rotate-right",
        difficulty="medium",
        statement="""
            Rotate an array

            Rotate an array k places to the right: each element moves k positions towards the end, and
            elements that fall off the end come back at the start.

            Input
            The first line holds n and k (1 <= n <= 20, 0 <= k <= 10^9). The second line holds n integers.

            Output
            The rotated array on one line, separated by spaces.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, k = data[0], data[1]
            a = data[2:2 + n]
            k %= n
            print(" ".join(map(str, a[n - k:] + a[:n - k])))
        """,
        example="5 2\n1 2 3 4 5\n",
        generate=_rotation,
    ),
    BundledSpec(
        slug="count-primes",
        difficulty="medium",
        statement="""
            Counting primes

            Count the primes up to n for several values of n.

            Input
            The first line holds T (1 <= T <= 5). Each of the next T lines holds an integer n
            (1 <= n <= 100000).

            Output
            T lines: the number of primes p with p <= n.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            queries = data[1:1 + data[0]]
            limit = max(queries)
            sieve = bytearray([1]) * (limit + 1)
            sieve[0] = 0
            if limit >= 1:
                sieve[1] = 0
            for p in range(2, int(limit ** 0.5) + 1):
                if sieve[p]:
                    sieve[p * p::p] = bytearray(len(range(p * p, limit + 1, p)))
            counts, total = [], 0
            for value in sieve:
                total += value
                counts.append(total)
            for n in queries:
                print(counts[n])
        """,
        example="3\n10\n1\n100\n",
        generate=_prime_queries,
    ),
    BundledSpec(
        slug="stock-profit",
        difficulty="medium",
        statement="""
            Best time to trade

            Given a stock's price on each of n days, buy once and then sell once on a later day to make the
            largest profit. If no trade makes money, the profit is 0.

            Input
            The first line holds n (1 <= n <= 30). The second line holds n prices, each between 1 and 100.

            Output
            The largest profit p_j - p_i over i < j, or 0 if it is never positive.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            lowest, best = None, 0
            for price in data[1:1 + data[0]]:
                if lowest is not None:
                    best = max(best, price - lowest)
                lowest = price if lowest is None else min(lowest, price)
            print(best)
        """,
        example="6\n7 1 5 3 6 4\n",
        generate=_prices,
    ),
    BundledSpec(
        slug="majority-element",
        difficulty="medium",
        statement="""
            Majority element

            Find the value that occurs more than n / 2 times in an array of n elements, if there is one.

            Input
            The first line holds n (1 <= n <= 15). The second line holds n integers between 1 and 5.

            Output
            The majority value, or -1 if no value occurs more than n / 2 times.
        """,
        reference="""
            import sys
            from collections import Counter
            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            value, count = Counter(data[1:1 + n]).most_common(1)[0]
            print(value if 2 * count > n else -1)
        """,
        example="5\n2 1 2 3 2\n",
        generate=_majority,
    ),
    BundledSpec(
        slug="grid-rect-sum",
        difficulty="medium",
        statement="""
            Rectangle sums

            Answer queries for the sum of a rectangle of a grid of integers.

            Input
            The first line holds r, c and q (1 <= r, c <= 6, 1 <= q <= 6). Each of the next r lines holds c
            integers between -9 and 9. Each of the next q lines holds a query r1 c1 r2 c2
            (1 <= r1 <= r2 <= r, 1 <= c1 <= c2 <= c).

            Output
            q lines: the sum of the cells in rows r1..r2 and columns c1..c2 (rows and columns counted from 1).
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            r, c, q = data[0], data[1], data[2]
            s = [[0] * (c + 1) for _ in range(r + 1)]
            for i in range(r):
                for j in range(c):
                    s[i + 1][j + 1] = data[3 + i * c + j] + s[i][j + 1] + s[i + 1][j] - s[i][j]
            pos = 3 + r * c
            for _ in range(q):
                r1, c1, r2, c2 = data[pos:pos + 4]
                pos += 4
                print(s[r2][c2] - s[r1 - 1][c2] - s[r2][c1 - 1] + s[r1 - 1][c1 - 1])
        """,
        example="2 3 2\n1 2 3\n4 5 6\n1 1 2 3\n2 2 2 3\n",
        generate=_grid_queries,
    ),
    BundledSpec(
        slug="next-greater",
        difficulty="medium",
        statement="""
            Next greater element

            For every element of an array, find the first element to its right that is strictly greater.

            Input
            The first line holds n (1 <= n <= 25). The second line holds n integers between 1 and 20.

            Output
            n numbers on one line, separated by spaces: for each a_i, the first a_j with j > i and a_j > a_i, or
            -1 if there is none.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            a = data[1:1 + data[0]]
            answer, stack = [-1] * len(a), []
            for i, value in enumerate(a):
                while stack and a[stack[-1]] < value:
                    answer[stack.pop()] = value
                stack.append(i)
            print(" ".join(map(str, answer)))
        """,
        example="5\n2 7 3 5 4\n",
        generate=_next_greater,
    ),
)
