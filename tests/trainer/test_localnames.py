import textwrap

from trainer.localnames import shorten_locals

SOURCE = textwrap.dedent('''
    import math as m
    total_count = 5

    def plain(values, scale=2):
        running_total = 0
        for item_value in values:
            running_total += item_value * scale
        squares = [each_one * each_one for each_one in values]
        return running_total, squares, sum(squares)

    def closures(values):
        counter_value = 0
        def bump(step_size):
            nonlocal counter_value
            counter_value += step_size
            return counter_value
        shared_name = 10
        def reads():
            return shared_name + 1
        for v in values:
            bump(v)
        return counter_value, reads()

    def keywords_and_strings(values):
        scale = 3
        label_text = "x"
        result_value = dict(scale=scale, label_text=label_text)
        message = f"{label_text}:{len(values)}"
        try:
            missing_thing = values[99]
        except IndexError as problem:
            missing_thing = type(problem).__name__
        def helper():
            return 1
        helper = helper() + 1
        return result_value, message, missing_thing, helper, m.floor(2.5), total_count

    class Holder:
        def method(self, values):
            accumulated = [v for v in values]
            self.accumulated = accumulated
            return accumulated, self.accumulated

    def uses_locals():
        some_local_name = 1
        return sorted(locals())

    if total_count:
        def guarded(values):
            guarded_sum = sum(values)
            return guarded_sum

    def positional(first_value, second_value):
        return first_value - second_value

    def by_keyword(first_value, other_value):
        return first_value - other_value

    def callback(first_value, third_value):
        return first_value * third_value

    def run():
        values = [1, 2, 3]
        return (plain(values), closures(values), keywords_and_strings(values),
                Holder().method(values), uses_locals(), positional(5, 3), guarded(values),
                by_keyword(5, other_value=3), sorted(values, key=lambda v: callback(v, -1)),
                list(map(callback, values, values)))
''')


def _run(source):
    namespace = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace["run"]()


def test_shorter_locals_run_the_same():
    short = shorten_locals(SOURCE)
    assert _run(short) == _run(SOURCE)
    assert len(short) < len(SOURCE)
    for gone in ("running_total", "item_value", "squares", "accumulated =", "shared_name",
                 "second_value", "guarded_sum"):
        assert gone not in short.replace("self.accumulated", ""), gone
    # Parameters are shortened only where the file alone calls the function, positionally.
    # Left as they are: other parameters, keyword arguments, names an f-string reads, attributes,
    # names declared nonlocal, names bound by except/def, and a function that reads its locals by name.
    for kept in ("scale=2):", "dict(scale=scale, label_text=label_text)",
                 'f"{label_text}:{len(values)}"', "except IndexError as problem",
                 "helper = helper() + 1", "self.accumulated", "some_local_name",
                 "nonlocal counter_value", "other_value):",
                 "def callback(first_value, third_value)"):
        assert kept in short, kept


def test_nothing_to_shorten_is_the_same_text():
    source = "X = 1\n\ndef f(a):\n    return a + X\n"
    assert shorten_locals(source) == source


def test_a_jit_compiled_kernel_keeps_its_names():
    # Triton re-reads a kernel's source: the one shipped stays the one that ran on GPUs.
    source = textwrap.dedent('''
        if triton is not None:
            @triton.jit
            def kernel(x_ptr, BLOCK: tl.constexpr):
                offsets = tl.arange(0, BLOCK)
                return offsets

            @triton.autotune(configs=[], key=[])
            @triton.jit
            def tuned(x_ptr):
                loaded_value = x_ptr
                return loaded_value

            def launcher(values):
                grid_size = len(values)
                return grid_size
    ''')
    short = shorten_locals(source)
    assert "offsets = tl.arange(0, BLOCK)" in short and "loaded_value = x_ptr" in short
    assert "grid_size" not in short
