"""Scripted chats for `mnemobot bench chat-tokens`: three stories, each told in English,
Russian and Chinese, 29 turns and one `/new` each.

The three tellings of a story say the same things and ask the same questions, so what one
language costs over another is the cost of the language, not of a different chat. Each
story was first written in one language (Lisbon in English, Kazan in Russian, Chengdu in
Chinese) and translated as a person would write it, names kept as that language writes
them; a question that shares no word with its answer in one telling ("What food should I
avoid?" for "allergic to shellfish") shares none in the others either.

A chat is a list of steps: a turn (what the user says, what the fake model answers, and,
for a question about something said before the last `/new`, a phrase the memory part of
the system prompt must hold for memory to have done its job), or `NEW` (the user starts
a new conversation: what came before is no longer in the request, only in memory). Small
talk ("hi", "thanks", an emoji) is marked: memory has nothing to add to it, so what it
gets is pure cost.

This module is data, longer than most for that reason.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    reply: str
    # For a recall question: a phrase the memory part of the system prompt must contain.
    expects: str | None = None
    small_talk: bool = False


def small(user: str, reply: str) -> Turn:
    return Turn(user, reply, small_talk=True)


NEW = "/new"
Step = Turn | str

LISBON_EN: list[Step] = [
    small("hi", "Hi! How can I help?"),
    Turn("I'm planning a trip to Lisbon in May with my sister Clara.", "Lovely! What do you need?"),
    Turn("We booked the Casa Azul hotel near Rua Augusta.", "Great choice, central and quiet."),
    Turn(
        "Clara is vegetarian, so restaurants need good veggie options.", "Noted: veggie-friendly."
    ),
    Turn(
        "Can you suggest three restaurants in Baixa?",
        "Try Ao 26, Jardim das Cerejas, Orelha Negra.",
    ),
    small("thanks!", "You're welcome!"),
    Turn(
        "I prefer walking over taxis when it's under 30 minutes.", "Got it, walking routes first."
    ),
    Turn("How far is Belém from Baixa on foot?", "About 1h30; take tram 15 instead."),
    small("ok", "Anything else?"),
    Turn("My flight lands at 9:40 on May 12, TAP flight TP1351.", "Noted, arrival May 12 at 9:40."),
    Turn(
        "What's the best way from the airport to Casa Azul?",
        "The metro red then green line, ~35 min.",
    ),
    Turn("Our budget is about 120 euros a day for the two of us.", "That works well for Lisbon."),
    small("👍", "😊"),
    Turn("I'm allergic to shellfish, remember that.", "I'll remember: no shellfish."),
    Turn("Is the Oceanarium worth it?", "Yes, plan two hours; buy tickets online."),
    Turn("We also want a day trip to Sintra on May 14.", "Take the train from Rossio, 40 min."),
    small("great, thanks a lot", "Enjoy the planning!"),
    Turn("I work as a nurse at the St. Mary clinic, so I need to be back by May 18.", "Noted."),
    NEW,
    small("hi again", "Hello!"),
    Turn("Which hotel did we book in Lisbon?", "The Casa Azul near Rua Augusta.", "Casa Azul"),
    Turn("When does my flight land?", "May 12 at 9:40.", "9:40"),
    Turn("What food should I avoid?", "Shellfish.", "shellfish"),
    small("ok thanks", "Anytime."),
    Turn("What did we plan for May 14?", "A day trip to Sintra.", "Sintra"),
    Turn("Who am I travelling with?", "Your sister Clara.", "Clara"),
    Turn("What's our daily budget?", "About 120 euros.", "120"),
    small("👌", "👍"),
    Turn("Where do I work again?", "At the St. Mary clinic, as a nurse.", "St. Mary"),
    small("thanks, bye!", "Bye!"),
]

LISBON_RU: list[Step] = [
    small("привет", "Привет! Чем помочь?"),
    Turn("Я планирую поездку в Лиссабон в мае с сестрой Кларой.", "Отлично! Что нужно?"),
    Turn("Мы забронировали отель Casa Azul рядом с Руа Аугуста.", "Хороший выбор: центр и тихо."),
    Turn(
        "Клара вегетарианка, так что нужны рестораны с хорошим вегетарианским меню.",
        "Понял: вегетарианские варианты.",
    ),
    Turn("Посоветуй три ресторана в Байше.", "Попробуйте Ao 26, Jardim das Cerejas, Orelha Negra."),
    small("спасибо!", "Пожалуйста!"),
    Turn(
        "Я предпочитаю ходить пешком, а не брать такси, если идти меньше 30 минут.",
        "Понял, сначала пешие маршруты.",
    ),
    Turn("Далеко ли от Байши до Белена пешком?", "Около полутора часов; лучше трамвай 15."),
    small("ок", "Что-нибудь ещё?"),
    Turn("Мой рейс TAP TP1351 прилетает 12 мая в 9:40.", "Записал: прилёт 12 мая в 9:40."),
    Turn(
        "Как лучше добраться из аэропорта до Casa Azul?",
        "На метро: красная, потом зелёная линия, около 35 минут.",
    ),
    Turn("Наш бюджет — около 120 евро в день на двоих.", "Для Лиссабона этого хватит."),
    small("👍", "😊"),
    Turn("У меня аллергия на морепродукты, запомни это.", "Запомню: никаких морепродуктов."),
    Turn("Стоит ли идти в Океанариум?", "Да, заложите два часа; билеты купите онлайн."),
    Turn("Ещё мы хотим съездить в Синтру 14 мая.", "Поезд с вокзала Росиу, 40 минут."),
    small("отлично, спасибо большое", "Удачного планирования!"),
    Turn("Я работаю медсестрой в клинике St. Mary, так что вернуться нужно к 18 мая.", "Понял."),
    NEW,
    small("привет ещё раз", "Здравствуйте!"),
    Turn(
        "Какой отель мы забронировали в Лиссабоне?", "Casa Azul рядом с Руа Аугуста.", "Casa Azul"
    ),
    Turn("Когда прилетает мой рейс?", "12 мая в 9:40.", "9:40"),
    Turn("Какой еды мне нужно избегать?", "Морепродуктов.", "морепродукт"),
    small("ок, спасибо", "Пожалуйста."),
    Turn("Что мы планировали на 14 мая?", "Поездку в Синтру.", "Синтр"),
    Turn("С кем я путешествую?", "С сестрой Кларой.", "Клар"),
    Turn("Какой у нас бюджет на день?", "Около 120 евро.", "120"),
    small("👌", "👍"),
    Turn("Напомни, где я работаю?", "Медсестрой в клинике St. Mary.", "St. Mary"),
    small("спасибо, пока!", "Пока!"),
]

LISBON_ZH: list[Step] = [
    small("你好", "你好！有什么可以帮你？"),
    Turn("我打算五月和我姐姐克拉拉一起去里斯本旅行。", "太好了！需要什么帮助？"),
    Turn("我们订了奥古斯塔街附近的Casa Azul酒店。", "好选择，位置在市中心又安静。"),
    Turn("克拉拉吃素，所以餐厅要有好的素食选择。", "记下了：要有素食。"),
    Turn("推荐三家拜沙区的餐厅吧。", "可以试试Ao 26、Jardim das Cerejas和Orelha Negra。"),
    small("谢谢！", "不客气！"),
    Turn("如果走路不到30分钟，我更喜欢步行，不打车。", "明白，优先步行路线。"),
    Turn("从拜沙步行到贝伦有多远？", "大约一个半小时；建议坐15路电车。"),
    small("好的", "还有别的吗？"),
    Turn("我的航班是TAP TP1351，5月12日9:40降落。", "记下了：5月12日9:40到达。"),
    Turn("从机场到Casa Azul怎么走最好？", "坐地铁红线再换绿线，大约35分钟。"),
    Turn("我们两个人每天的预算大约120欧元。", "在里斯本足够了。"),
    small("👍", "😊"),
    Turn("我对贝类过敏，记住这个。", "记住了：不吃贝类。"),
    Turn("海洋馆值得去吗？", "值得，留两个小时，提前网上买票。"),
    Turn("我们还想5月14日去辛特拉一日游。", "从罗西奥站坐火车，40分钟。"),
    small("太好了，非常感谢", "祝计划顺利！"),
    Turn("我在圣玛丽诊所当护士，所以5月18日前必须回来。", "记下了。"),
    NEW,
    small("你好呀", "你好！"),
    Turn("我们在里斯本订的是哪家酒店？", "奥古斯塔街附近的Casa Azul。", "Casa Azul"),
    Turn("我的航班什么时候降落？", "5月12日9:40。", "9:40"),
    Turn("我应该避免吃什么？", "贝类。", "贝类"),
    small("好的谢谢", "不客气。"),
    Turn("我们5月14日计划做什么？", "去辛特拉一日游。", "辛特拉"),
    Turn("我和谁一起旅行？", "你姐姐克拉拉。", "克拉拉"),
    Turn("我们每天的预算是多少？", "大约120欧元。", "120"),
    small("👌", "👍"),
    Turn("我在哪里工作来着？", "在圣玛丽诊所当护士。", "圣玛丽"),
    small("谢谢，再见！", "再见！"),
]

KAZAN_EN: list[Step] = [
    small("hi", "Hi! How can I help?"),
    Turn("I'm moving to Kazan in March with my husband Andrei.", "Great! What do you need?"),
    Turn("We rented a flat on Bauman Street, building 12.", "A nice area."),
    Turn("Andrei is allergic to cats, so we avoid neighbours with cats.", "Noted."),
    Turn(
        "Recommend three cafés near Bauman Street.",
        "Try House of Tatar Cuisine, Chak-Chak and Tyubeteika.",
    ),
    small("thanks", "You're welcome!"),
    Turn("I work as a programmer at Ak Bars Digital Technologies.", "Noted."),
    Turn("How long is the walk from Bauman Street to the Kremlin?", "About fifteen minutes."),
    small("ok", "Anything else?"),
    Turn("The truck with our things arrives on March 3 at 10 am.", "Noted: March 3, 10:00."),
    Turn(
        "Which internet provider is best in central Kazan?",
        "Most people pick Tattelecom or Dom.ru.",
    ),
    Turn("The renovation budget is 200 thousand roubles.", "Got it, 200 thousand."),
    small("👍", "😊"),
    Turn("Remember: I play tennis on Fridays at 19:00.", "Noted: tennis on Fridays."),
    Turn("Is the Kamal Theatre worth a visit?", "Yes, some plays come with a translation."),
    Turn("We also want to go to Sviyazhsk on March 8.", "There's a hydrofoil or a bus."),
    small("great, thanks a lot", "Glad to help!"),
    Turn("Our dog is called Zhuzha, she's 4.", "Hi Zhuzha!"),
    NEW,
    small("hi again", "Hello!"),
    Turn("What street is our flat on?", "Bauman Street, building 12.", "Bauman"),
    Turn("When does the truck arrive?", "March 3 at 10 am.", "March 3"),
    Turn("Who is allergic, and to what?", "Andrei, to cats.", "cat"),
    small("ok, thanks", "You're welcome."),
    Turn("Where were we going on March 8?", "To Sviyazhsk.", "Sviyazhsk"),
    Turn("What's our dog's name?", "Zhuzha.", "Zhuzha"),
    Turn("What's the renovation budget?", "200 thousand roubles.", "200"),
    small("👌", "👍"),
    Turn("Where do I work?", "At Ak Bars Digital Technologies.", "Ak Bars"),
    small("thanks, bye!", "Bye!"),
]

KAZAN_RU: list[Step] = [
    small("привет", "Привет! Чем помочь?"),
    Turn("Я переезжаю в Казань в марте вместе с мужем Андреем.", "Здорово! Что нужно?"),
    Turn("Мы сняли квартиру на улице Баумана, дом 12.", "Отличный район."),
    Turn("У Андрея аллергия на кошек, так что соседей с кошками избегаем.", "Учту."),
    Turn(
        "Посоветуй три кафе рядом с Бауманской.",
        "Попробуйте «Дом татарской кулинарии», «Чак-чак», «Тюбетей».",
    ),
    small("спасибо", "Пожалуйста!"),
    Turn("Я работаю программистом в компании Ак Барс Цифровые Технологии.", "Запомнил."),
    Turn("Сколько идти пешком от улицы Баумана до Кремля?", "Минут пятнадцать."),
    small("ок", "Что-нибудь ещё?"),
    Turn("Грузовик с вещами приедет 3 марта в 10 утра.", "Записал: 3 марта, 10:00."),
    Turn("Какой интернет-провайдер лучше в центре Казани?", "Обычно берут Таттелеком или Дом.ру."),
    Turn("Бюджет на ремонт — 200 тысяч рублей.", "Понял, 200 тысяч."),
    small("👍", "😊"),
    Turn("Запомни: по пятницам у меня теннис в 19:00.", "Запомнил: теннис по пятницам."),
    Turn("Стоит ли сходить в театр Камала?", "Да, там есть спектакли с переводом."),
    Turn("Ещё хотим съездить в Свияжск 8 марта.", "Туда ходит метеор или автобус."),
    small("отлично, спасибо большое", "Рад помочь!"),
    Turn("Нашу собаку зовут Жужа, ей 4 года.", "Привет Жуже!"),
    NEW,
    small("привет ещё раз", "Здравствуйте!"),
    Turn("На какой улице наша квартира?", "На улице Баумана, дом 12.", "Баумана"),
    Turn("Когда приедет грузовик?", "3 марта в 10 утра.", "3 марта"),
    Turn("У кого аллергия и на что?", "У Андрея, на кошек.", "кош"),
    small("ок, спасибо", "Пожалуйста."),
    Turn("Куда мы собирались поехать 8 марта?", "В Свияжск.", "Свияжск"),
    Turn("Как зовут нашу собаку?", "Жужа.", "Жужа"),
    Turn("Какой бюджет на ремонт?", "200 тысяч рублей.", "200"),
    small("👌", "👍"),
    Turn("Где я работаю?", "В Ак Барс Цифровые Технологии.", "Ак Барс"),
    small("спасибо, пока!", "Пока!"),
]

KAZAN_ZH: list[Step] = [
    small("你好", "你好！有什么可以帮你？"),
    Turn("我三月要和丈夫安德烈一起搬到喀山。", "太好了！需要什么？"),
    Turn("我们在鲍曼街12号租了一套公寓。", "很好的街区。"),
    Turn("安德烈对猫过敏，所以我们避开养猫的邻居。", "记下了。"),
    Turn("推荐三家鲍曼街附近的咖啡馆。", "试试“鞑靼美食之家”、“恰克恰克”和“小花帽”。"),
    small("谢谢", "不客气！"),
    Turn("我在Ak Bars数字技术公司当程序员。", "记下了。"),
    Turn("从鲍曼街走到克里姆林宫要多久？", "大约十五分钟。"),
    small("好的", "还有别的吗？"),
    Turn("搬家的卡车3月3日上午10点到。", "记下了：3月3日10点。"),
    Turn("喀山市中心哪家网络运营商最好？", "一般选Tattelecom或Dom.ru。"),
    Turn("装修预算是20万卢布。", "明白，20万。"),
    small("👍", "😊"),
    Turn("记住：我每周五晚上7点打网球。", "记住了：周五打网球。"),
    Turn("卡马尔剧院值得去吗？", "值得，有些剧目有翻译。"),
    Turn("我们还想3月8日去斯维亚日斯克。", "可以坐水翼船或大巴。"),
    small("太好了，非常感谢", "乐意帮忙！"),
    Turn("我们的狗叫茹扎，今年4岁。", "你好，茹扎！"),
    NEW,
    small("你好呀", "你好！"),
    Turn("我们的公寓在哪条街？", "鲍曼街12号。", "鲍曼街"),
    Turn("卡车什么时候到？", "3月3日上午10点。", "3月3日"),
    Turn("谁对什么过敏？", "安德烈对猫过敏。", "猫"),
    small("好的谢谢", "不客气。"),
    Turn("3月8日我们打算去哪里？", "斯维亚日斯克。", "斯维亚日斯克"),
    Turn("我们的狗叫什么名字？", "茹扎。", "茹扎"),
    Turn("装修预算是多少？", "20万卢布。", "20万"),
    small("👌", "👍"),
    Turn("我在哪里工作？", "在Ak Bars数字技术公司。", "Ak Bars"),
    small("谢谢，再见！", "再见！"),
]

CHENGDU_EN: list[Step] = [
    small("hi", "Hi! How can I help?"),
    Turn("Next month I'm travelling to Chengdu with my mom.", "Great! What do you need?"),
    Turn("We booked the Jinjiang Hotel near Chunxi Road.", "Very convenient."),
    Turn("My mom can't eat spicy food, please remember.", "Got it: nothing spicy."),
    Turn(
        "Recommend three Sichuan restaurants that aren't spicy.",
        "Try Chen Mapo's mild dishes, Zhong dumplings and Long Chaoshou.",
    ),
    small("thanks", "You're welcome!"),
    Turn("I'm a middle-school maths teacher and I work in Hangzhou.", "Noted."),
    Turn("How long from the hotel to Kuanzhai Alley?", "About twenty minutes by taxi."),
    small("ok", "Anything else?"),
    Turn(
        "Our flight is Air China CA4507, arriving October 5 at 10 am.",
        "Noted: October 5, 10:00.",
    ),
    Turn(
        "What time should we leave for the panda base?",
        "Around 7:30; pandas are most active in the morning.",
    ),
    Turn("Our budget is about 800 yuan a day.", "That's plenty in Chengdu."),
    small("👍", "😊"),
    Turn("I'm allergic to peanuts, remember that.", "Noted: peanut allergy."),
    Turn("Is Dujiangyan worth it?", "Yes, pair it with Mount Qingcheng for a day."),
    Turn(
        "We also want to see the Leshan Giant Buddha on October 8.",
        "One hour by high-speed train from Chengdu East.",
    ),
    small("great, thanks a lot", "Have a good trip!"),
    Turn("Our cat is called Doudou; the neighbours look after her while we're away.", "OK."),
    NEW,
    small("hi again", "Hello!"),
    Turn("Which hotel did we book?", "The Jinjiang Hotel near Chunxi Road.", "Jinjiang"),
    Turn("When does our flight arrive?", "October 5 at 10 am.", "October 5"),
    Turn("What am I allergic to?", "Peanuts.", "peanut"),
    small("ok thanks", "You're welcome."),
    Turn("Where are we going on October 8?", "Leshan, to see the Giant Buddha.", "Leshan"),
    Turn("What's our cat's name?", "Doudou.", "Doudou"),
    Turn("What's our daily budget?", "About 800 yuan.", "800"),
    small("👌", "👍"),
    Turn("Where do I work?", "In Hangzhou, as a maths teacher.", "Hangzhou"),
    small("thanks, bye!", "Bye!"),
]

CHENGDU_RU: list[Step] = [
    small("привет", "Привет! Чем помочь?"),
    Turn("В следующем месяце я еду в Чэнду с мамой.", "Здорово! Что нужно?"),
    Turn("Мы забронировали отель «Цзиньцзян» у улицы Чуньси.", "Очень удобное место."),
    Turn("Мама не ест острое, запомни, пожалуйста.", "Запомнил: ничего острого."),
    Turn(
        "Посоветуй три неострых сычуаньских ресторана.",
        "Мягкие блюда в Chen Mapo, пельмени Zhong и Long Chaoshou.",
    ),
    small("спасибо", "Пожалуйста!"),
    Turn("Я учитель математики в средней школе, работаю в Ханчжоу.", "Запомнил."),
    Turn("Сколько ехать от отеля до переулка Куаньчжай?", "Минут двадцать на такси."),
    small("ок", "Что-нибудь ещё?"),
    Turn("Наш рейс Air China CA4507, прилёт 5 октября в 10 утра.", "Записал: 5 октября, 10:00."),
    Turn("Во сколько лучше выезжать на базу панд?", "Около 7:30, утром панды активнее."),
    Turn("Наш бюджет — около 800 юаней в день.", "Для Чэнду этого достаточно."),
    small("👍", "😊"),
    Turn("У меня аллергия на арахис, запомни.", "Запомнил: аллергия на арахис."),
    Turn("Стоит ли ехать в Дуцзянъянь?", "Да, вместе с горой Цинчэн на один день."),
    Turn(
        "Ещё мы хотим 8 октября посмотреть Большого Будду в Лэшане.",
        "Час на скоростном поезде от вокзала Чэнду-Восточный.",
    ),
    small("отлично, спасибо большое", "Хорошей поездки!"),
    Turn("Нашу кошку зовут Доудоу, пока нас нет, за ней смотрят соседи.", "Хорошо."),
    NEW,
    small("привет ещё раз", "Здравствуйте!"),
    Turn("Какой отель мы забронировали?", "«Цзиньцзян» у улицы Чуньси.", "Цзиньцзян"),
    Turn("Когда прилетает наш рейс?", "5 октября в 10 утра.", "5 октября"),
    Turn("На что у меня аллергия?", "На арахис.", "арахис"),
    small("ок, спасибо", "Пожалуйста."),
    Turn("Куда мы едем 8 октября?", "В Лэшань, к Большому Будде.", "Лэшан"),
    Turn("Как зовут нашу кошку?", "Доудоу.", "Доудоу"),
    Turn("Какой у нас бюджет на день?", "Около 800 юаней.", "800"),
    small("👌", "👍"),
    Turn("Где я работаю?", "В Ханчжоу, учителем математики.", "Ханчжоу"),
    small("спасибо, пока!", "Пока!"),
]

CHENGDU_ZH: list[Step] = [
    small("你好", "你好！有什么可以帮你？"),
    Turn("我下个月要和我妈妈一起去成都旅游。", "太好了！需要什么帮助？"),
    Turn("我们订了春熙路附近的锦江宾馆。", "位置很方便。"),
    Turn("我妈妈不能吃辣，请记住。", "好的，记住了：不吃辣。"),
    Turn("推荐三家不辣的川菜馆吧。", "可以试试陈麻婆的清汤系列、钟水饺和龙抄手。"),
    small("谢谢", "不客气！"),
    Turn("我是一名中学数学老师，在杭州工作。", "记住了。"),
    Turn("从宾馆到宽窄巷子要多久？", "打车大约二十分钟。"),
    small("好的", "还有别的吗？"),
    Turn("我们的航班是国航CA4507，十月五号上午十点到。", "记下了：十月五号十点到达。"),
    Turn("去大熊猫基地最好几点出发？", "早上七点半左右，熊猫上午最活跃。"),
    Turn("我们每天的预算大概八百元。", "这个预算在成都很充足。"),
    small("👍", "😊"),
    Turn("我对花生过敏，记住这个。", "记住了：花生过敏。"),
    Turn("都江堰值得去吗？", "值得，可以和青城山一起安排一天。"),
    Turn("我们还想十月八号去乐山看大佛。", "从成都东站坐高铁一小时。"),
    small("太好了，非常感谢", "祝旅途愉快！"),
    Turn("我家的猫叫豆豆，出门期间邻居帮忙照顾。", "好的。"),
    NEW,
    small("你好呀", "你好！"),
    Turn("我们订的是哪家宾馆？", "春熙路附近的锦江宾馆。", "锦江宾馆"),
    Turn("我们的航班什么时候到？", "十月五号上午十点。", "十月五号"),
    Turn("我对什么过敏？", "花生。", "花生"),
    small("好的谢谢", "不客气。"),
    Turn("十月八号我们打算去哪里？", "乐山看大佛。", "乐山"),
    Turn("我家的猫叫什么名字？", "豆豆。", "豆豆"),
    Turn("我们每天的预算是多少？", "大概八百元。", "八百"),
    small("👌", "👍"),
    Turn("我在哪里工作？", "在杭州当中学数学老师。", "杭州"),
    small("谢谢，再见！", "再见！"),
]

LANGUAGES = ("en", "ru", "zh")

# story -> language -> chat
STORIES: dict[str, dict[str, list[Step]]] = {
    "lisbon": {"en": LISBON_EN, "ru": LISBON_RU, "zh": LISBON_ZH},
    "kazan": {"en": KAZAN_EN, "ru": KAZAN_RU, "zh": KAZAN_ZH},
    "chengdu": {"en": CHENGDU_EN, "ru": CHENGDU_RU, "zh": CHENGDU_ZH},
}
